/**
 * The `/v1/` rate-limit rules (DECISIONS 9): windows per verified principal; everything
 * unverified (401, and 404/405 no credential was verified for) per client address,
 * IPv6 by /64; a credential that verifies is never refused for its address's failures.
 */
import assert from "node:assert/strict";
import { type App, createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { rateLimiterOf } from "../../../lib/api/rate_limit.ts";
import {
  authJson,
  engineCreateBody,
  TEST_ADMIN_KEY,
  TEST_TOKEN_SECRET,
  testApp,
  windowClock,
} from "../../_helpers.ts";

function from(hostname: string): Deno.ServeHandlerInfo {
  return {
    remoteAddr: { transport: "tcp", hostname, port: 40000 },
    completed: Promise.resolve(),
  } as Deno.ServeHandlerInfo;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** Calls `app` for `path` from client address `addr`. */
async function callFrom(
  app: App,
  addr: string,
  path: string,
  init: RequestInit = {},
): Promise<Answer> {
  const res = await app.handler(
    new Request(`http://localhost${path}`, init),
    from(addr),
  );
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text.startsWith("{") ? JSON.parse(text) : {},
  };
}

async function mintKey(app: App, tenant: string): Promise<string> {
  const res = await callFrom(app, "203.0.113.250", "/v1/api-keys", {
    method: "POST",
    headers: authJson(TEST_ADMIN_KEY),
    body: JSON.stringify({ tenant_id: tenant, scopes: ["sessions:read"] }),
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.api_key as string;
}

/** The rate-limit counters in KV after a merge: subject → total. */
async function storedCounts(app: App): Promise<Map<string, number>> {
  await rateLimiterOf(app.deps).flush();
  const out = new Map<string, number>();
  for await (
    const e of app.deps.kv.list<Deno.KvU64>({ prefix: ["rate_limits"] })
  ) out.set(String(e.key[2]), Number(e.value.value));
  return out;
}

/** A made-up credential of request `i`: key-shaped, JWT-ish or plain, in turn. */
function madeUp(i: number): string {
  const pad = String(i).padStart(4, "0");
  return [
    `avk_01JZZZZZZZZZZZZZZZZZZZ${pad}_${"s".repeat(39)}${pad}`,
    `guess-${pad}`,
    `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIke3BhZH0ifQ.${pad}`,
  ][i % 3];
}

Deno.test("rotating made-up keys from one address spends that address's window, on any path, and leaves no counter per key", async (t) => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "100" }, { clock });
  const attacker = "198.51.100.7";
  try {
    const key = await mintKey(app.app, "t1");
    const paths: [string, string][] = [
      ["GET", "/v1/sessions/session:none"],
      ["GET", "/v1/nope"],
      ["PUT", "/v1/sessions"],
      ["POST", "/v1/sessions"],
      ["GET", "/v1/api-keys"],
      ["DELETE", "/v1/sessions/x/y/z"],
    ];
    await t.step(
      "100 requests with 100 made-up keys: all answered as usual",
      async () => {
        for (let i = 0; i < 100; i++) {
          const [method, path] = paths[i % paths.length];
          const r = await callFrom(app.app, attacker, path, {
            method,
            headers: { authorization: `Bearer ${madeUp(i)}` },
          });
          assert.notEqual(r.status, 429, `request ${i}`);
          assert.equal(r.headers.get("x-ratelimit-remaining"), String(99 - i));
        }
      },
    );
    await t.step(
      "the 101st is refused, whatever it sends and asks for",
      async () => {
        for (
          const [i, headers, path] of [
            [100, { authorization: `Bearer ${madeUp(100)}` }, "/v1/nope"],
            [101, { "x-api-key": madeUp(101) }, "/v1/sessions/session:none"],
            [102, {}, "/v1/sessions/session:none"],
            [103, {}, "/v1/totally/unknown"],
          ] as const
        ) {
          const r = await callFrom(app.app, attacker, path, { headers });
          assert.equal(r.status, 429, `request ${i}`);
          assert.equal(r.body.code, "AVTR_RATE_LIMIT_EXCEEDED");
          assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
          assert.equal(
            r.headers.get("retry-after"),
            String(r.body.retry_after),
          );
        }
        assert.match(
          (await app.app.deps.metrics.expose()).body,
          /avatar_rate_limited_total\{kind="address"\} 4/,
        );
      },
    );
    await t.step(
      "a valid key from that address still gets through, on its own window",
      async () => {
        for (const path of ["/v1/sessions/session:none", "/v1/nope"]) {
          const r = await callFrom(app.app, attacker, path, {
            headers: { authorization: `Bearer ${key}` },
          });
          assert.equal(r.status, 404, path);
          assert.notEqual(r.headers.get("x-ratelimit-remaining"), "0");
        }
        const admin = await callFrom(
          app.app,
          attacker,
          "/v1/sessions/session:none",
          {
            headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
          },
        );
        assert.equal(admin.status, 404);
      },
    );
    await t.step("another address is not affected", async () => {
      const r = await callFrom(app.app, "198.51.100.8", "/v1/nope");
      assert.equal(r.status, 404);
      assert.equal(r.headers.get("x-ratelimit-remaining"), "99");
    });
    await t.step(
      "KV holds a counter per address and per real principal only",
      async () => {
        const counts = await storedCounts(app.app);
        const keyId = key.split("_")[1];
        const address = [...counts].filter(([s]) => s.startsWith("a:"));
        // The attacker's address and the bystander one; minting was verified.
        assert.deepEqual(address.map(([, n]) => n).sort((x, y) => x - y), [
          1,
          100,
        ]);
        assert.equal(counts.get(`k:${keyId}`), 2);
        assert.equal(counts.get("o:"), 2); // the mint and the admin read
        assert.equal(counts.size, 4, [...counts.keys()].join(" "));
        for (let i = 0; i < 104; i++) {
          const secret = madeUp(i);
          for (const subject of counts.keys()) {
            assert.equal(subject.includes(secret), false);
          }
        }
      },
    );
  } finally {
    await app.close();
  }
});

Deno.test("a key forged under a real key id is counted against the address, never the key", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "3" }, { clock });
  try {
    const key = await mintKey(app.app, "t1");
    const keyId = key.split("_")[1];
    const forged = `avk_${keyId}_${"A".repeat(43)}`;
    for (let i = 0; i < 3; i++) {
      const r = await callFrom(
        app.app,
        "192.0.2.66",
        "/v1/sessions/session:none",
        {
          headers: { authorization: `Bearer ${forged}` },
        },
      );
      assert.equal(r.status, 401);
    }
    const spent = await callFrom(
      app.app,
      "192.0.2.66",
      "/v1/sessions/session:none",
      {
        headers: { authorization: `Bearer ${forged}` },
      },
    );
    assert.equal(spent.status, 429);
    const real = await callFrom(
      app.app,
      "192.0.2.66",
      "/v1/sessions/session:none",
      {
        headers: { authorization: `Bearer ${key}` },
      },
    );
    assert.equal(real.status, 404, "the key's window is untouched");
    assert.equal(real.headers.get("x-ratelimit-remaining"), "2");
  } finally {
    await app.close();
  }
});

Deno.test("a verified principal has its own window whatever address it comes from, and 429s when it is spent", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "2" }, { clock });
  try {
    const key = await mintKey(app.app, "t1");
    const read = (addr: string, path = "/v1/sessions/session:none") =>
      callFrom(app.app, addr, path, {
        headers: { authorization: `Bearer ${key}` },
      });
    assert.equal((await read("192.0.2.1")).status, 404);
    assert.equal((await read("192.0.2.2")).status, 404);
    const third = await read("192.0.2.3");
    assert.equal(third.status, 429, "spent on any address");
    assert.equal(third.body.code, "AVTR_RATE_LIMIT_EXCEEDED");
    // An unknown path with the spent key is a 429 too: the key verifies.
    assert.equal((await read("192.0.2.3", "/v1/nope")).status, 429);
    // Unverified traffic from those addresses is unaffected by the key's window.
    assert.equal(
      (await callFrom(app.app, "192.0.2.1", "/v1/nope")).status,
      404,
    );
    // Both refusals counted in the metrics as the principal's.
    assert.match(
      (await app.app.deps.metrics.expose()).body,
      /avatar_rate_limited_total\{kind="principal"\} 2/,
    );
  } finally {
    await app.close();
  }
});

Deno.test("client addresses: IPv6 is grouped by /64, IPv4 per address, IPv4-mapped IPv6 as its IPv4", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "2" }, { clock });
  const status = async (addr: string) =>
    (await callFrom(app.app, addr, "/v1/nope")).status;
  try {
    assert.equal(await status("2001:db8:1:2::1"), 404);
    assert.equal(await status("2001:db8:1:2:ffff:ffff:ffff:ffff"), 404);
    assert.equal(await status("2001:db8:1:2:a:b:c:d"), 429, "same /64");
    assert.equal(await status("2001:db8:1:3::1"), 404, "the next /64");
    assert.equal(await status("192.0.2.1"), 404);
    assert.equal(await status("::ffff:192.0.2.1"), 404);
    assert.equal(await status("192.0.2.1"), 429, "mapped counts as its IPv4");
    assert.equal(await status("192.0.2.2"), 404, "IPv4 per address");
  } finally {
    await app.close();
  }
});

Deno.test("a valid media token is counted against its session, not against a spent address", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "2" }, { clock });
  const addr = "192.0.2.44";
  try {
    const created = await callFrom(app.app, "192.0.2.200", "/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify(engineCreateBody()),
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = created.body.session_id as string;
    const token = created.body.client_token as string;
    const ws = (t: string) =>
      callFrom(app.app, addr, `/v1/sessions/${id}/ws?token=${t}`);
    assert.equal((await ws("forged")).status, 401);
    assert.equal((await ws("forged")).status, 401);
    assert.equal((await ws("forged")).status, 429, "the address is spent");
    // The valid token verifies (then this plain GET is refused as no upgrade).
    const valid = await ws(token);
    assert.equal(valid.status, 400, JSON.stringify(valid.body));
    assert.equal(valid.headers.get("x-ratelimit-remaining"), "1");
  } finally {
    await app.close();
  }
});

/**
 * Runs `fn` on two app instances sharing one fresh KV file with `RATE_LIMIT_PER_MINUTE`
 * at `perMinute`; closes both and removes the file after.
 */
async function withTwoInstances(
  perMinute: number,
  fn: (a: App, b: App) => Promise<void>,
): Promise<void> {
  const path = await Deno.makeTempFile({ suffix: ".kv" });
  const clock = windowClock();
  const apps: App[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      apps.push(
        await createApp({
          env: {
            KV_PATH: path,
            TOKEN_SECRET: TEST_TOKEN_SECRET,
            ADMIN_API_KEY: TEST_ADMIN_KEY,
            RATE_LIMIT_PER_MINUTE: String(perMinute),
          },
          now: clock.now,
          log: memoryLogger(),
        }),
      );
    }
    await fn(apps[0], apps[1]);
  } finally {
    for (const app of apps) await app.close();
    await Deno.remove(path);
  }
}

Deno.test("two app instances on one KV file share a principal's window and an address's window after a flush", async () => {
  await withTwoInstances(10, async (a, b) => {
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    const read = (
      app: App,
      headers: Record<string, string>,
      addr = "192.0.2.9",
    ) => callFrom(app, addr, "/v1/sessions/session:none", { headers });
    for (let i = 0; i < 6; i++) await read(a, admin);
    await rateLimiterOf(a.deps).flush();
    // b has not counted this principal: its first request counts, then merges.
    await read(b, admin);
    await rateLimiterOf(b.deps).flush();
    const r = await read(b, admin);
    assert.equal(r.headers.get("x-ratelimit-remaining"), "2", "6 + 1 + this");
    await rateLimiterOf(b.deps).flush();
    // a counted nothing since its merge: it reads the others' counts with its next one.
    const stale = await read(a, admin);
    assert.equal(stale.headers.get("x-ratelimit-remaining"), "3", "6 + this");
    await rateLimiterOf(a.deps).flush();
    assert.equal(
      (await read(a, admin)).headers.get("x-ratelimit-remaining"),
      "0",
      "9 + this",
    );
    assert.equal((await read(a, admin)).status, 429);

    // Unverified traffic of one address, spread over both instances.
    for (let i = 0; i < 10; i++) {
      assert.equal(
        (await read(a, { "x-api-key": `g${i}` }, "192.0.2.77")).status,
        401,
      );
    }
    await rateLimiterOf(a.deps).flush();
    assert.equal(
      (await read(b, { "x-api-key": "g10" }, "192.0.2.77")).status,
      401,
    );
    await rateLimiterOf(b.deps).flush();
    assert.equal(
      (await read(b, { "x-api-key": "g11" }, "192.0.2.77")).status,
      429,
    );
    assert.equal((await read(b, {}, "192.0.2.77")).status, 429);
  });
});
