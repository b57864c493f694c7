import assert from "node:assert/strict";
import { RATE_LIMIT_WINDOW_MS } from "../../../lib/api/rate_limit.ts";
import {
  authJson,
  TEST_ADMIN_KEY,
  testApp,
  TestClock,
  windowClock,
} from "../../_helpers.ts";

function resetOf(clock: TestClock): number {
  return (Math.floor(clock.now() / RATE_LIMIT_WINDOW_MS) + 1) * 60;
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
    // A credential that verifies counts against its principal's window; everything
    // else against the client address's (one address here: the handler gets none).
    let admin = 100;
    let address = 100;
    const cases: [string, string, RequestInit, number, "admin" | "address"][] =
      [
        [
          "201 POST /v1/api-keys",
          "/v1/api-keys",
          {
            method: "POST",
            headers: authJson(TEST_ADMIN_KEY),
            body: JSON.stringify({
              tenant_id: "t1",
              scopes: ["sessions:read"],
            }),
          },
          201,
          "admin",
        ],
        [
          "401 without a credential",
          "/v1/sessions/session:abc",
          {},
          401,
          "address",
        ],
        [
          "401 with an unknown key",
          "/v1/sessions/session:abc",
          {
            headers: { "x-api-key": "not-a-key" },
          },
          401,
          "address",
        ],
        ["404 on an unmatched path", "/v1/nope", {}, 404, "address"],
        ["404 on /v1 itself", "/v1", {}, 404, "address"],
        [
          "404 on an unmatched path with a made-up key",
          "/v1/nope",
          {
            headers: { authorization: "Bearer made-up" },
          },
          404,
          "address",
        ],
        [
          "404 on an unknown session",
          "/v1/sessions/session:abc",
          {
            headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
          },
          404,
          "admin",
        ],
        [
          "404 on an unmatched path with a valid key",
          "/v1/nope",
          {
            headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
          },
          404,
          "admin",
        ],
        [
          "405 on a wrong method",
          "/v1/sessions",
          {
            method: "PUT",
            headers: authJson(TEST_ADMIN_KEY),
          },
          405,
          "admin",
        ],
        [
          "405 on a wrong method without a credential",
          "/v1/sessions",
          {
            method: "PUT",
          },
          405,
          "address",
        ],
      ];
    for (const [name, path, init, status, window] of cases) {
      await t.step(name, async () => {
        const res = await app.request(path, init);
        await res.body?.cancel();
        assert.equal(res.status, status);
        const left = window === "admin" ? --admin : --address;
        assertRateHeaders(res, 100, left, reset);
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
