/**
 * The rate limiter (lib/api/rate_limit.ts): fixed windows per subject, counted locally and
 * merged into KV, bounded in memory, exact on one instance. Subjects:
 * rate_subjects_test.ts.
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import {
  ADDRESS_OVERFLOW_SUBJECT,
  RATE_LIMIT_WINDOW_MS,
  RateLimiter,
  rateLimiterOf,
} from "../../../lib/api/rate_limit.ts";
import { rateLimitKey } from "../../../lib/api/rate_store.ts";
import { keySubject } from "../../../lib/api/rate_subjects.ts";
import {
  TEST_ADMIN_KEY,
  TEST_TOKEN_SECRET,
  TestClock,
  windowClock,
} from "../../_helpers.ts";

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

/** The subjects an app wrote to KV for one request with `credential`, after a merge. */
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
    // a counted nothing since its merge, so it read nothing back: it admits on its own
    // view (the overshoot DECISIONS 9 bounds) and reads the total with its next merge.
    assert.equal(a.take("s").remaining, 3);
    await a.flush();
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
    const subject = rateLimiterOf(app.deps).addressSubject("unknown");
    await app.close();
    assert.throws(() => rateLimiterOf(app.deps));
    assert.equal(await readTotal(kv, clock, subject), 3);
  } finally {
    kv.close();
  }
});

/** A real `:memory:` KV whose `getMany` calls and keys read are counted. */
function countingKv(inner: Deno.Kv): { kv: Deno.Kv; keysRead: () => number } {
  let keys = 0;
  const kv = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "getMany") {
        return (list: Deno.KvKey[], ...rest: unknown[]) => {
          keys += list.length;
          return value.apply(target, [list, ...rest]);
        };
      }
      return value.bind(target);
    },
  });
  return { kv, keysRead: () => keys };
}

Deno.test("RateLimiter.flush() reads back only the subjects it merged, not every subject it saw", async () => {
  const inner = await Deno.openKv(":memory:");
  const { kv, keysRead } = countingKv(inner);
  const clock = windowClock();
  const rl = new RateLimiter({ kv, limit: 10, now: clock.now });
  try {
    for (let i = 0; i < 50; i++) rl.take(keySubject(`k${i}`));
    await rl.flush();
    assert.equal(keysRead(), 50);
    assert.deepEqual(rl.lastFlush, { merged: 50, readBack: 50 });
    rl.take(keySubject("k7"));
    await rl.flush();
    assert.equal(keysRead(), 51, "one subject changed, one key read");
    assert.deepEqual(rl.lastFlush, { merged: 1, readBack: 1 });
    await rl.flush();
    assert.equal(keysRead(), 51, "nothing changed, nothing read");
    assert.equal(rl.take(keySubject("k7")).remaining, 7, "its count was kept");
  } finally {
    inner.close();
  }
});

Deno.test("RateLimiter keeps its maps bounded: past the bound, new addresses share an overflow window and new principals take a merged principal's place", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const rl = new RateLimiter({
    kv,
    limit: 5,
    now: clock.now,
    maxAddresses: 10,
    maxPrincipals: 4,
  });
  try {
    for (let i = 0; i < 1000; i++) {
      rl.take(rl.addressSubject(`10.0.${i >> 8}.${i & 255}`));
    }
    assert.equal(rl.size, 11, "10 addresses and the overflow window");
    // The 990 addresses past the bound shared one window: it is spent.
    assert.equal(rl.take(rl.addressSubject("10.9.9.9")).allowed, false);
    assert.equal(rl.peek(ADDRESS_OVERFLOW_SUBJECT).allowed, false);
    // Addresses counted before the bound keep their own windows.
    assert.equal(rl.take(rl.addressSubject("10.0.0.1")).remaining, 3);
    // Principals are bounded apart, so a flood of addresses cannot crowd them out.
    for (let i = 0; i < 4; i++) {
      assert.equal(rl.take(keySubject(`k${i}`)).remaining, 4);
    }
    await rl.flush(); // k0..k3 merged into KV
    assert.equal(rl.take(keySubject("k4")).remaining, 4);
    assert.equal(rl.size, 15, "k0, the least recently used, made room for k4");
    // k0 comes back: its count is read back from KV, not lost.
    assert.equal(rl.take(keySubject("k0")).remaining, 4);
    await rl.flush();
    assert.equal(rl.take(keySubject("k0")).remaining, 2);
    // A new window's flush forgets the old windows.
    clock.advance(RATE_LIMIT_WINDOW_MS);
    await rl.flush();
    assert.equal(rl.size, 0);
    assert.equal(rl.take(rl.addressSubject("10.9.9.9")).remaining, 4);
  } finally {
    kv.close();
  }
});

Deno.test("RateLimiter: a tenant filling the principal bound with minted keys cannot spend other principals' windows", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = windowClock();
  const rl = new RateLimiter({
    kv,
    limit: 5,
    now: clock.now,
    maxPrincipals: 50,
  });
  try {
    // One tenant's 60 keys (it minted them with keys:admin), each used to the limit.
    for (let i = 0; i < 60; i++) {
      for (let n = 0; n < 5; n++) rl.take(keySubject(`attacker${i}`));
      if (i % 10 === 9) await rl.flush();
    }
    await rl.flush();
    // Another tenant's key, first seen now, has its own full window.
    const victim = rl.take(keySubject("victim"));
    assert.equal(victim.allowed, true);
    assert.equal(victim.remaining, 4);
    // And the attacker's keys stay limited: each one's total comes back from KV.
    rl.take(keySubject("attacker0"));
    await rl.flush();
    assert.equal(rl.take(keySubject("attacker0")).allowed, false);
    assert.ok(rl.size <= 50, `principal windows bounded (${rl.size})`);
  } finally {
    kv.close();
  }
});
