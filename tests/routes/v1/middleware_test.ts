import assert from "node:assert/strict";
import { type App, createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import {
  RATE_LIMIT_WINDOW_MS,
  rateLimiterOf,
} from "../../../lib/api/rate_limit.ts";
import {
  authJson,
  TEST_ADMIN_KEY,
  TEST_TOKEN_SECRET,
  testApp,
  TestClock,
} from "../../_helpers.ts";

/** A clock at the start of a window, so a whole window lies ahead. */
function windowClock(): TestClock {
  const t = new TestClock();
  t.t = Math.floor(t.t / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS;
  return t;
}

function resetOf(clock: TestClock): number {
  return (Math.floor(clock.now() / RATE_LIMIT_WINDOW_MS) + 1) * 60;
}

function from(hostname: string): Deno.ServeHandlerInfo {
  return {
    remoteAddr: { transport: "tcp", hostname, port: 40000 },
    completed: Promise.resolve(),
  } as Deno.ServeHandlerInfo;
}

function assertRateHeaders(
  res: Response,
  limit: number,
  remaining: number,
  reset: number,
): void {
  assert.equal(res.headers.get("x-ratelimit-limit"), String(limit));
  assert.equal(res.headers.get("x-ratelimit-remaining"), String(remaining));
  assert.equal(res.headers.get("x-ratelimit-reset"), String(reset));
}

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

const ENGINE_BODY = JSON.stringify({
  provider_type: "external_engine",
  provider_config: {
    external_engine: {
      url: "wss://engine.example.com/v1",
      auth_headers: { authorization: "Bearer engine-secret" },
    },
  },
});

Deno.test("v1 middleware puts X-RateLimit-* on success and on every error", async (t) => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "100" }, { clock });
  const reset = resetOf(clock);
  try {
    // Each credential, and the address of requests without one, has its own window;
    // a 401 also counts against the address's failure window, and its headers show
    // whichever window has less left.
    const remaining = new Map<string, number>();
    let failuresLeft = 100;
    const cases: [string, string, RequestInit, number][] = [
      ["201 POST /v1/api-keys", "/v1/api-keys", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify({ tenant_id: "t1", scopes: ["sessions:read"] }),
      }, 201],
      ["401 without a credential", "/v1/sessions/session:abc", {}, 401],
      ["401 with an unknown key", "/v1/sessions/session:abc", {
        headers: { "x-api-key": "not-a-key" },
      }, 401],
      ["404 on an unmatched path", "/v1/nope", {}, 404],
      ["404 on /v1 itself", "/v1", {}, 404],
      ["404 on an unknown session", "/v1/sessions/session:abc", {
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      }, 404],
      ["405 on a wrong method", "/v1/sessions", {
        method: "PUT",
        headers: authJson(TEST_ADMIN_KEY),
      }, 405],
    ];
    for (const [name, path, init, status] of cases) {
      await t.step(name, async () => {
        const res = await app.request(path, init);
        await res.body?.cancel();
        assert.equal(res.status, status);
        const h = new Headers(init.headers);
        const subject = h.get("authorization") ?? h.get("x-api-key") ?? "";
        const left = (remaining.get(subject) ?? 100) - 1;
        remaining.set(subject, left);
        if (status === 401) failuresLeft--;
        assertRateHeaders(
          res,
          100,
          status === 401 ? Math.min(left, failuresLeft) : left,
          reset,
        );
      });
    }
    await t.step("outside /v1/ there are none", async () => {
      const res = await app.request("/healthz");
      await res.body?.cancel();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-ratelimit-limit"), null);
    });
  } finally {
    await app.close();
  }
});

Deno.test("v1 middleware answers 429 AVTR_RATE_LIMIT_EXCEEDED with Retry-After = retry_after, then a new window admits again", async () => {
  const clock = windowClock();
  clock.advance(20_250);
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "3" }, { clock });
  const reset = resetOf(clock);
  const headers = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  try {
    for (const remaining of [2, 1, 0]) {
      const res = await app.request("/v1/sessions/session:none", { headers });
      assert.equal(res.status, 404);
      assertRateHeaders(res, 3, remaining, reset);
      await res.body?.cancel();
    }
    const res = await app.request("/v1/sessions/session:none", {
      headers: { ...headers, "x-request-id": "rl-1" },
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "40"); // 39.75 s to the window's end
    assertRateHeaders(res, 3, 0, reset);
    assert.equal(res.headers.get("x-request-id"), "rl-1");
    const body = await res.json();
    assert.equal(body.code, "AVTR_RATE_LIMIT_EXCEEDED");
    assert.equal(body.retry_after, 40);
    assert.equal(body.request_id, "rl-1");
    assert.match(body.doc_url, /\/errors\/AVTR_RATE_LIMIT_EXCEEDED$/);

    clock.t = reset * 1000 - 400;
    const last = await app.request("/v1/nope", { headers });
    assert.equal(last.status, 429);
    assert.equal(last.headers.get("retry-after"), "1");
    assert.equal((await last.json()).retry_after, 1);

    clock.t = reset * 1000;
    const next = await app.request("/v1/sessions/session:none", { headers });
    assert.equal(next.status, 404);
    assertRateHeaders(next, 3, 2, reset + 60);
    await next.body?.cancel();
  } finally {
    await app.close();
  }
});

Deno.test("v1 middleware counts per credential, and per client address without one", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "2" }, { clock });
  const call = async (init: RequestInit, addr = "192.0.2.1") => {
    const res = await app.app.handler(
      new Request("http://localhost/v1/nope", init),
      from(addr),
    );
    await res.body?.cancel();
    return res;
  };
  try {
    const a = { headers: { authorization: "Bearer key-a" } };
    const b = { headers: { "x-api-key": "key-b" } };
    assert.equal((await call(a)).status, 404);
    assert.equal((await call(a, "192.0.2.2")).status, 404);
    assert.equal((await call(a)).status, 429, "key-a is spent on any address");
    const rb = await call(b);
    assert.equal(rb.status, 404, "key-b has its own window");
    assert.equal(rb.headers.get("x-ratelimit-remaining"), "1");
    assert.equal((await call({})).status, 404);
    assert.equal((await call({})).status, 404);
    assert.equal((await call({})).status, 429, "the address is spent");
    const other = await call({}, "192.0.2.9");
    assert.equal(other.status, 404, "another address has its own window");
    assert.equal(other.headers.get("x-ratelimit-remaining"), "1");
  } finally {
    await app.close();
  }
});

Deno.test("v1 middleware counts an API key by its key id, and a forged secret under that id apart", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "3" }, { clock });
  try {
    const minted = await app.request("/v1/api-keys", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify({ tenant_id: "t1", scopes: ["sessions:read"] }),
    });
    assert.equal(minted.status, 201);
    const { api_key: key, key_id: keyId } = await minted.json();
    const read = async (credential: string, addr: string) => {
      const res = await app.app.handler(
        new Request("http://localhost/v1/sessions/session:none", {
          headers: { authorization: `Bearer ${credential}` },
        }),
        from(addr),
      );
      await res.body?.cancel();
      return res;
    };
    const r1 = await read(key, "192.0.2.1");
    assert.equal(r1.status, 404);
    assert.equal(r1.headers.get("x-ratelimit-remaining"), "2");
    // Someone who knows the key id but not the secret: 401s of their own window.
    const forged = `avk_${keyId}_${"A".repeat(43)}`;
    assert.notEqual(forged, key);
    for (let i = 0; i < 2; i++) {
      assert.equal((await read(forged, "192.0.2.66")).status, 401);
    }
    const r2 = await read(key, "192.0.2.2");
    assert.equal(
      r2.status,
      404,
      "the key's window is untouched by the forgery",
    );
    assert.equal(r2.headers.get("x-ratelimit-remaining"), "1", "any address");
    await rateLimiterOf(app.app.deps).flush();
    const subjects: string[] = [];
    for await (
      const e of app.app.deps.kv.list({ prefix: ["rate_limits"] })
    ) subjects.push(String(e.key[2]));
    const secret = key.slice(key.lastIndexOf("_") + 1);
    assert.equal(subjects.some((s) => s.includes(secret)), false);
    assert.equal(
      subjects.filter((s) => s.startsWith(`k:${keyId}:`)).length,
      2,
      "the key and the forgery, apart",
    );
  } finally {
    await app.close();
  }
});

Deno.test("two app instances on one KV file share the rate-limit window after a flush", async () => {
  await withTwoInstances(10, async (a, b) => {
    const headers = { "x-api-key": "shared-key" };
    const call = async (app: App) => {
      const res = await app.handler(
        new Request("http://localhost/v1/nope", { headers }),
      );
      await res.body?.cancel();
      return res;
    };
    for (let i = 0; i < 6; i++) await call(a);
    await rateLimiterOf(a.deps).flush();
    await rateLimiterOf(b.deps).flush();
    // b has not seen this credential: its first request admits and counts.
    await call(b);
    await rateLimiterOf(b.deps).flush();
    const res = await call(b);
    assert.equal(res.headers.get("x-ratelimit-remaining"), "2", "6 + 1 + this");
    await rateLimiterOf(b.deps).flush();
    await rateLimiterOf(a.deps).flush();
    assert.equal((await call(a)).headers.get("x-ratelimit-remaining"), "1");
    assert.equal((await call(a)).headers.get("x-ratelimit-remaining"), "0");
    assert.equal((await call(a)).status, 429);
  });
});

Deno.test("access log: one JSON line per request with id, method, route, status, duration, tenant", async () => {
  const app = await testApp();
  try {
    const created = await app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY, { "x-request-id": "log-create" }),
      body: ENGINE_BODY,
    });
    assert.equal(created.status, 200);
    const { session_id } = await created.json();
    const res = await app.request(`/v1/sessions/${session_id}`, {
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        "x-request-id": "log-read",
      },
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const miss = await app.request("/v1/nope", {
      headers: { "x-request-id": "log-miss" },
    });
    await miss.body?.cancel();

    const records = app.log.lines.map((l) => JSON.parse(l)).filter((r) =>
      r.msg === "request"
    );
    const read = records.filter((r) => r.request_id === "log-read");
    assert.equal(read.length, 1);
    assert.equal(read[0].method, "GET");
    assert.equal(read[0].route, "/v1/sessions/:session_id");
    assert.equal(read[0].status, 200);
    assert.equal(typeof read[0].duration_ms, "number");
    assert.ok(read[0].duration_ms >= 0);
    assert.equal(read[0].tenant, "admin");
    assert.match(read[0].ts, /^\d{4}-\d\d-\d\dT/);
    const create = records.find((r) => r.request_id === "log-create");
    assert.equal(create.method, "POST");
    assert.equal(create.route, "/v1/sessions");
    const missed = records.find((r) => r.request_id === "log-miss");
    assert.equal(missed.route, "(unmatched)");
    assert.equal(missed.status, 404);
    assert.equal(missed.tenant, undefined);
  } finally {
    await app.close();
  }
});

Deno.test("access log never carries a token or bearer credential", async (t) => {
  const secret = "SECRETzq9w8e7r6t5y4u3i2o1p0";
  const app = await testApp();
  try {
    const cases: [string, string, RequestInit][] = [
      ["token in a media-socket URL", `/v1/sessions/x/ws?token=${secret}`, {}],
      [
        "token on a valid session id",
        `/v1/sessions/session:abc/ws?token=${secret}&x=1`,
        {},
      ],
      ["bearer credential", "/v1/sessions/session:abc", {
        headers: { authorization: `Bearer ${secret}` },
      }],
      ["x-api-key credential", "/v1/sessions", {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json" },
        body: "{}",
      }],
    ];
    for (const [name, path, init] of cases) {
      await t.step(name, async () => {
        const before = app.log.lines.length;
        const res = await app.request(path, init);
        await res.body?.cancel();
        const lines = app.log.lines.slice(before);
        assert.ok(lines.some((l) => JSON.parse(l).msg === "request"));
        for (const line of lines) {
          assert.equal(line.includes(secret), false, line);
        }
      });
    }
  } finally {
    await app.close();
  }
});

/** Calls `/v1/...` on `app` from client address `addr`; returns status, headers, body. */
async function callFrom(
  app: App,
  path: string,
  headers: Record<string, string>,
  addr: string,
): Promise<
  { status: number; headers: Headers; body: Record<string, unknown> }
> {
  const res = await app.handler(
    new Request(`http://localhost${path}`, { headers }),
    from(addr),
  );
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? JSON.parse(text) : {},
  };
}

Deno.test("v1 middleware limits failed authentications per client address, whatever credential they send", async (t) => {
  const clock = windowClock();
  clock.advance(20_250);
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "3" }, { clock });
  const reset = resetOf(clock);
  const path = "/v1/sessions/session:none";
  const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  const attacker = "192.0.2.66";
  try {
    await t.step(
      "each 401 counts against the address's failure window",
      async () => {
        for (let i = 0; i < 3; i++) {
          const r = await callFrom(app.app, path, {
            authorization: `Bearer guess-${i}`,
          }, attacker);
          assert.equal(r.status, 401);
          assert.equal(r.body.code, "AVTR_AUTH_INVALID_KEY");
          // The failure window is the one closest to refusing this client.
          assert.equal(r.headers.get("x-ratelimit-remaining"), String(2 - i));
        }
      },
    );
    await t.step("no KV write per request", async () => {
      const keys = [];
      for await (const e of app.app.deps.kv.list({ prefix: ["rate_limits"] })) {
        keys.push(e.key);
      }
      assert.deepEqual(keys, []);
    });
    await t.step(
      "then 429 before authentication: a fresh guess, no credential, even the admin key",
      async () => {
        const tries: Record<string, string>[] = [
          { authorization: "Bearer guess-3" },
          { "x-api-key": "guess-4" },
          {},
          admin,
        ];
        for (const headers of tries) {
          const r = await callFrom(app.app, path, headers, attacker);
          assert.equal(r.status, 429, JSON.stringify(headers));
          assert.equal(r.body.code, "AVTR_RATE_LIMIT_EXCEEDED");
          assert.equal(r.headers.get("retry-after"), "40");
          assert.equal(r.body.retry_after, 40);
          assert.equal(r.headers.get("x-ratelimit-limit"), "3");
          assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
          assert.equal(r.headers.get("x-ratelimit-reset"), String(reset));
        }
      },
    );
    await t.step("another address is not affected", async () => {
      const other = "192.0.2.67";
      assert.equal(
        (await callFrom(app.app, path, admin, other)).status,
        404,
      );
      assert.equal(
        (await callFrom(app.app, path, { "x-api-key": "guess-5" }, other))
          .status,
        401,
      );
    });
    await t.step(
      "the failures are merged into KV with the other counts",
      async () => {
        await rateLimiterOf(app.app.deps).flush();
        const totals: Record<string, number> = {};
        for await (
          const e of app.app.deps.kv.list<Deno.KvU64>({
            prefix: ["rate_limits"],
          })
        ) {
          const subject = String(e.key[2]);
          totals[subject.slice(0, 2)] = (totals[subject.slice(0, 2)] ?? 0) +
            Number(e.value.value);
        }
        // 3 + 1 failures (two addresses); 3 + 2 credentials; 2 of them the admin key's.
        assert.equal(totals["f:"], 4);
      },
    );
    await t.step("a new window admits the address again", async () => {
      clock.t = reset * 1000;
      assert.equal(
        (await callFrom(app.app, path, admin, attacker)).status,
        404,
      );
      assert.equal(
        (await callFrom(
          app.app,
          path,
          { authorization: "Bearer guess-6" },
          attacker,
        ))
          .status,
        401,
      );
    });
  } finally {
    await app.close();
  }
});

Deno.test("v1 middleware counts a 401 without a credential as a failed authentication too", async () => {
  const clock = windowClock();
  const app = await testApp({ RATE_LIMIT_PER_MINUTE: "2" }, { clock });
  const path = "/v1/sessions/session:none";
  try {
    for (let i = 0; i < 2; i++) {
      assert.equal(
        (await callFrom(app.app, path, {}, "192.0.2.5")).status,
        401,
      );
    }
    const r = await callFrom(app.app, path, {
      authorization: `Bearer ${TEST_ADMIN_KEY}`,
    }, "192.0.2.5");
    assert.equal(r.status, 429);
    assert.equal(r.body.code, "AVTR_RATE_LIMIT_EXCEEDED");
  } finally {
    await app.close();
  }
});

Deno.test("failed authentications of one address are shared between instances after a merge", async () => {
  await withTwoInstances(3, async (a, b) => {
    const url = "/v1/sessions/session:none";
    const addr = "198.51.100.7";
    for (let i = 0; i < 3; i++) {
      const r = await callFrom(a, url, { "x-api-key": `guess-a${i}` }, addr);
      assert.equal(r.status, 401);
    }
    await rateLimiterOf(a.deps).flush();
    // b has seen no failure from this address yet: it answers one, then merges.
    assert.equal(
      (await callFrom(b, url, { "x-api-key": "guess-b0" }, addr)).status,
      401,
    );
    await rateLimiterOf(b.deps).flush();
    const r = await callFrom(b, url, {
      authorization: `Bearer ${TEST_ADMIN_KEY}`,
    }, addr);
    assert.equal(r.status, 429);
    assert.equal(r.body.code, "AVTR_RATE_LIMIT_EXCEEDED");
  });
});
