import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { createApp } from "../../../app.ts";
import { presentKey } from "../../../lib/auth/api_keys.ts";
import { memoryLogger } from "../../../lib/log.ts";
import {
  failedAuthSubject,
  RATE_LIMIT_WINDOW_MS,
  RateLimiter,
  rateLimiterOf,
  rateLimitKey,
  rateLimitSubject,
  SubjectMac,
} from "../../../lib/api/rate_limit.ts";
import {
  TEST_ADMIN_KEY,
  TEST_TOKEN_SECRET,
  TestClock,
} from "../../_helpers.ts";

function sha256Hex(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

/** A clock at the start of a window, so a whole window lies ahead. */
function windowClock(): TestClock {
  const t = new TestClock();
  t.t = Math.floor(t.t / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS;
  return t;
}

async function readTotal(
  kv: Deno.Kv,
  clock: TestClock,
  subject: string,
): Promise<number | null> {
  const w = Math.floor(clock.now() / RATE_LIMIT_WINDOW_MS);
  const got = await kv.get<Deno.KvU64>(rateLimitKey(w, subject));
  return got.value === null ? null : Number(got.value.value);
}

Deno.test("RateLimiter.take() admits up to the limit, then refuses until the window ends", async (t) => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  clock.advance(15_500);
  const rl = new RateLimiter({ kv, limit: 3, now: clock.now });
  try {
    const windowEnd = (Math.floor(clock.now() / 60_000) + 1) * 60;
    await t.step("counts down remaining", () => {
      for (const remaining of [2, 1, 0]) {
        const d = rl.take("s");
        assert.equal(d.allowed, true);
        assert.equal(d.limit, 3);
        assert.equal(d.remaining, remaining);
        assert.equal(d.reset, windowEnd);
      }
    });
    await t.step("refuses the next with retryAfter = seconds to reset", () => {
      const d = rl.take("s");
      assert.equal(d.allowed, false);
      assert.equal(d.remaining, 0);
      assert.equal(d.reset, windowEnd);
      assert.equal(d.retryAfter, 45); // 44.5 s left, rounded up
    });
    await t.step(
      "retryAfter is at least 1 at the very end of the window",
      () => {
        clock.t = windowEnd * 1000 - 1;
        assert.equal(rl.take("s").retryAfter, 1);
      },
    );
    await t.step("a new window starts afresh with a new reset", () => {
      clock.t = windowEnd * 1000;
      const d = rl.take("s");
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, 2);
      assert.equal(d.reset, windowEnd + 60);
      assert.equal(d.retryAfter, 60);
    });
  } finally {
    kv.close();
  }
});

Deno.test("RateLimiter.take() counts each subject separately", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const rl = new RateLimiter({ kv, limit: 2, now: clock.now });
  try {
    rl.take("a");
    rl.take("a");
    assert.equal(rl.take("a").allowed, false);
    const b = rl.take("b");
    assert.equal(b.allowed, true);
    assert.equal(b.remaining, 1);
  } finally {
    kv.close();
  }
});

Deno.test("rateLimitSubject() is an HMAC of the credential, else the address, never keeping either", () => {
  const k1 = new Uint8Array(32).fill(1);
  const m1 = new SubjectMac(k1);
  const m2 = new SubjectMac(new Uint8Array(32).fill(2));
  const key = "avk_live_secret_credential_value";
  const s1 = rateLimitSubject(m1, key, "10.0.0.1");
  assert.equal(
    s1,
    "c:" + createHmac("sha256", k1).update("c\0" + key).digest("hex"),
    "HMAC-SHA256 (RFC 2104)",
  );
  assert.equal(s1, rateLimitSubject(m1, key, "10.0.0.2"));
  assert.equal(s1, rateLimitSubject(m1, key, "10.0.0.2"), "repeatable");
  assert.notEqual(s1, rateLimitSubject(m1, key + "x", "10.0.0.1"));
  assert.notEqual(s1, rateLimitSubject(m2, key, "10.0.0.1"), "keyed");
  assert.notEqual(s1, "c:" + sha256Hex("c\0" + key), "not a plain hash");
  assert.match(s1, /^c:[0-9a-f]{64}$/);
  const a = rateLimitSubject(m1, null, "10.0.0.1");
  assert.match(a, /^a:[0-9a-f]{64}$/);
  assert.notEqual(a, rateLimitSubject(m1, null, "10.0.0.2"));
  assert.equal(a.includes("10.0.0.1"), false);
  // A credential equal to an address is still a different subject.
  assert.notEqual(rateLimitSubject(m1, "10.0.0.1", "x"), a);
  const f = failedAuthSubject(m1, "10.0.0.1");
  assert.match(f, /^f:[0-9a-f]{64}$/);
  assert.notEqual(f.slice(2), a.slice(2));
  assert.notEqual(f, failedAuthSubject(m1, "10.0.0.2"));
  assert.notEqual(f, failedAuthSubject(m2, "10.0.0.1"));
  // Keys longer than a SHA-256 block are hashed first, as RFC 2104 says.
  const long = new Uint8Array(100).fill(9);
  assert.equal(
    new SubjectMac(long).subject("a", "x"),
    "a:" + createHmac("sha256", long).update("a\0x").digest("hex"),
  );
});

Deno.test("rateLimitSubject() of a key-shaped credential is its key id and a prefix of its secret's hash", () => {
  const m1 = new SubjectMac(new Uint8Array(32).fill(1));
  const m2 = new SubjectMac(new Uint8Array(32).fill(2));
  const keyId = "01JAAAAAAAAAAAAAAAAAAAAAAA";
  const secret = "s".repeat(43);
  const plaintext = `avk_${keyId}_${secret}`;
  const hash = createHash("sha256").update(secret).digest("base64url");
  const s1 = rateLimitSubject(m1, plaintext, "10.0.0.1");
  assert.equal(s1, `k:${keyId}:${hash.slice(0, 22)}`);
  assert.equal(s1, rateLimitSubject(m1, plaintext, "10.0.0.2"), "any address");
  assert.equal(s1, rateLimitSubject(m2, plaintext, "10.0.0.1"), "any instance");
  assert.equal(s1.includes(secret), false);
  // The key authentication already worked out gives the same subject, hashing nothing.
  assert.equal(rateLimitSubject(m1, plaintext, "x", presentKey(plaintext)), s1);
  // A made-up secret under the same key id cannot spend the key's window.
  const guess = `avk_${keyId}_${"t".repeat(43)}`;
  assert.notEqual(rateLimitSubject(m1, guess, "10.0.0.1"), s1);
  // Not key-shaped (one character short): the keyed MAC of the credential.
  const near = plaintext.slice(0, -1);
  assert.equal(
    rateLimitSubject(m1, near, "10.0.0.1"),
    "c:" + createHmac("sha256", new Uint8Array(32).fill(1)).update("c\0" + near)
      .digest("hex"),
  );
});

Deno.test("RateLimiter counts failed authentications per address, and forgets them with their window", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const rl = new RateLimiter({ kv, limit: 2, now: clock.now });
  try {
    assert.equal(rl.failuresSpent("10.0.0.1"), null);
    assert.equal(rl.countFailure("10.0.0.1").remaining, 1);
    assert.equal(rl.failuresSpent("10.0.0.1"), null);
    assert.equal(rl.countFailure("10.0.0.1").remaining, 0);
    const spent = rl.failuresSpent("10.0.0.1");
    assert.equal(spent?.allowed, false);
    assert.equal(spent?.remaining, 0);
    assert.equal(rl.failuresSpent("10.0.0.2"), null, "per address");
    assert.equal(rl.take(rl.subjectOf(null, "10.0.0.1")).allowed, true);
    await rl.flush();
    assert.notEqual(rl.failuresSpent("10.0.0.1"), null);
    clock.advance(RATE_LIMIT_WINDOW_MS);
    assert.equal(rl.failuresSpent("10.0.0.1"), null, "a new window");
    await rl.flush();
    assert.equal(rl.countFailure("10.0.0.1").remaining, 1);
  } finally {
    kv.close();
  }
});

/** The subjects an app wrote to KV for one request with `credential`, after a merge. */
async function storedSubjects(
  env: Record<string, string>,
  credential: string,
): Promise<{ subjects: string[]; log: string[] }> {
  const kv = await Deno.openKv(":memory:");
  const log = memoryLogger();
  const app = await createApp({
    env: { ADMIN_API_KEY: TEST_ADMIN_KEY, ...env },
    kv,
    log,
  });
  try {
    const res = await app.handler(
      new Request("http://localhost/v1/nope", {
        headers: { authorization: `Bearer ${credential}` },
      }),
    );
    await res.body?.cancel();
    await rateLimiterOf(app.deps).flush();
    const subjects: string[] = [];
    for await (const e of kv.list({ prefix: ["rate_limits"] })) {
      subjects.push(String(e.key[2]));
    }
    return { subjects, log: log.lines };
  } finally {
    await app.close();
    kv.close();
  }
}

Deno.test("rate-limit subjects in KV are keyed by TOKEN_SECRET: no offline guessing from a KV dump", async (t) => {
  const credential = "weak-admin-key";
  const other = "other-token-secret-0123456789abcdefghijklmnop";
  await t.step("one secret, one subject on every instance", async () => {
    const a = await storedSubjects(
      { TOKEN_SECRET: TEST_TOKEN_SECRET },
      credential,
    );
    const b = await storedSubjects(
      { TOKEN_SECRET: TEST_TOKEN_SECRET },
      credential,
    );
    assert.equal(a.subjects.length, 1);
    assert.deepEqual(a.subjects, b.subjects);
    assert.notEqual(a.subjects[0], "c:" + sha256Hex("c\0" + credential));
    assert.equal(a.subjects[0].includes(credential), false);
    const c = await storedSubjects({ TOKEN_SECRET: other }, credential);
    assert.notEqual(
      c.subjects[0],
      a.subjects[0],
      "another secret, another subject",
    );
  });
  await t.step(
    "an unusable secret: a random per-process key, with one warning",
    async () => {
      const a = await storedSubjects({ TOKEN_SECRET: "short" }, credential);
      const b = await storedSubjects({ TOKEN_SECRET: "short" }, credential);
      assert.notEqual(a.subjects[0], b.subjects[0]);
      const warnings = a.log.map((l) => JSON.parse(l)).filter((r) =>
        r.level === "warn" && /rate-limit/.test(r.msg)
      );
      assert.equal(warnings.length, 1);
    },
  );
});

Deno.test("RateLimiter.flush() merges local counts into KV and stays exact on one instance", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const rl = new RateLimiter({ kv, limit: 10, now: clock.now });
  try {
    for (let i = 0; i < 4; i++) rl.take("s");
    assert.equal(
      await readTotal(kv, clock, "s"),
      null,
      "no KV write per request",
    );
    await rl.flush();
    assert.equal(await readTotal(kv, clock, "s"), 4);
    assert.equal(rl.take("s").remaining, 5);
    await rl.flush();
    assert.equal(await readTotal(kv, clock, "s"), 5);
    await rl.flush();
    assert.equal(
      await readTotal(kv, clock, "s"),
      5,
      "nothing pending, nothing added",
    );
  } finally {
    kv.close();
  }
});

Deno.test("RateLimiter instances on one KV file share the window after a flush", async () => {
  const path = await Deno.makeTempFile({ suffix: ".kv" });
  const kvA = await Deno.openKv(path);
  const kvB = await Deno.openKv(path);
  const clock = windowClock();
  const a = new RateLimiter({ kv: kvA, limit: 10, now: clock.now });
  const b = new RateLimiter({ kv: kvB, limit: 10, now: clock.now });
  try {
    for (let i = 0; i < 6; i++) a.take("s");
    b.take("s");
    await a.flush();
    await b.flush();
    assert.equal(await readTotal(kvA, clock, "s"), 7);
    // b read back the global total: 7 used, this is the 8th.
    assert.equal(b.take("s").remaining, 2);
    await b.flush();
    await a.flush();
    assert.equal(a.take("s").remaining, 1);
    assert.equal(a.take("s").remaining, 0);
    assert.equal(a.take("s").allowed, false);
  } finally {
    kvA.close();
    kvB.close();
    await Deno.remove(path);
  }
});

Deno.test("RateLimiter.flush() sweeps counters of windows before the previous one", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const rl = new RateLimiter({ kv, limit: 10, now: clock.now });
  try {
    const w0 = Math.floor(clock.now() / RATE_LIMIT_WINDOW_MS);
    rl.take("s");
    await rl.flush();
    clock.advance(RATE_LIMIT_WINDOW_MS);
    rl.take("s");
    await rl.flush();
    assert.notEqual((await kv.get(rateLimitKey(w0, "s"))).value, null);
    clock.advance(RATE_LIMIT_WINDOW_MS);
    rl.take("s");
    await rl.flush();
    assert.equal((await kv.get(rateLimitKey(w0, "s"))).value, null);
    assert.notEqual((await kv.get(rateLimitKey(w0 + 1, "s"))).value, null);
    assert.notEqual((await kv.get(rateLimitKey(w0 + 2, "s"))).value, null);
  } finally {
    kv.close();
  }
});

Deno.test("RateLimiter keeps counting locally when KV fails, and logs it once", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const log = memoryLogger();
  const rl = new RateLimiter({ kv, limit: 3, now: clock.now, log });
  rl.take("s");
  kv.close();
  await rl.flush();
  await rl.flush();
  assert.equal(rl.take("s").remaining, 1);
  assert.equal(rl.take("s").remaining, 0);
  assert.equal(rl.take("s").allowed, false);
  const warnings = log.lines.filter((l) =>
    l.includes("rate-limit merge failed")
  );
  assert.equal(warnings.length, 1);
});

Deno.test("startRateLimiter() merges once more when the app closes", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const app = await createApp({
    env: {
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      RATE_LIMIT_PER_MINUTE: "50",
    },
    kv,
    now: clock.now,
    log: memoryLogger(),
  });
  try {
    const limiter = rateLimiterOf(app.deps);
    assert.equal(limiter.limit, 50);
    for (let i = 0; i < 3; i++) {
      await (await app.handler(new Request("http://localhost/v1/nope"))).body
        ?.cancel();
    }
    const subject = rateLimiterOf(app.deps).subjectOf(null, "unknown");
    await app.close();
    assert.throws(() => rateLimiterOf(app.deps));
    assert.equal(await readTotal(kv, clock, subject), 3);
  } finally {
    kv.close();
  }
});
