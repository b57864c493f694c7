/**
 * client/server.ts's retries against the real service in-process: which answers and
 * failures are retried, after how long, and which never are.
 */
import assert from "node:assert/strict";
import { ERROR_CODES } from "../../lib/errors.ts";
import {
  errorBodySchema,
  sessionResponseSchema,
} from "../../lib/api/schemas.ts";
import { TEST_ADMIN_KEY, TestClock } from "../_helpers.ts";
import { driveTo, sessionApp } from "../routes/v1/sessions/_helpers.ts";
import {
  clientFor,
  engineBody,
  failSessionReads,
  rejects,
} from "./_helpers.ts";

Deno.test("createSession() retries a 429 after retry_after with jitter, same Idempotency-Key and X-Request-Id", async () => {
  const clock = new TestClock(Date.UTC(2026, 10, 22, 12, 0, 40));
  const t = await sessionApp({ RATE_LIMIT_PER_MINUTE: "1" }, { clock });
  try {
    const { client, seen, sleeps } = clientFor(t);
    // The window's only request.
    await rejects(client.getSession("session:nope"));
    const created = await client.createSession(engineBody(), {
      requestId: "req-create-1",
    });
    sessionResponseSchema.parse(created);
    assert.equal(seen.length, 3);
    const [first, second] = [seen[1].headers, seen[2].headers];
    assert.ok(first.get("idempotency-key"));
    assert.equal(first.get("idempotency-key"), second.get("idempotency-key"));
    assert.equal(first.get("x-request-id"), "req-create-1");
    assert.equal(second.get("x-request-id"), "req-create-1");
    // 20 s left in the window → retry_after 20, waited 20 s × (1 + 0.2 × 0.5).
    assert.deepEqual(sleeps, [22_000]);
  } finally {
    await t.close();
  }
});

Deno.test("createSession() uses the caller's Idempotency-Key when given", async () => {
  const t = await sessionApp();
  try {
    const { client, seen } = clientFor(t);
    const a = await client.createSession(engineBody(), {
      idempotencyKey: "order-42",
    });
    const b = await client.createSession(engineBody(), {
      idempotencyKey: "order-42",
    });
    assert.equal(a.session_id, b.session_id);
    assert.equal(seen[0].headers.get("idempotency-key"), "order-42");
    const c = await client.createSession(engineBody());
    assert.notEqual(c.session_id, a.session_id);
    assert.notEqual(seen[2].headers.get("idempotency-key"), "order-42");
  } finally {
    await t.close();
  }
});

Deno.test("createSession() retried after a lost answer replays the same session", async () => {
  const t = await sessionApp();
  try {
    const answers: Response[] = [];
    const { client, seen, sleeps } = clientFor(t, {
      after: (n, res) => {
        answers.push(res);
        if (n === 0) throw new TypeError("connection reset by peer");
      },
    });
    const created = await client.createSession(engineBody());
    const lost = await answers[0].json();
    assert.equal(created.session_id, lost.session_id);
    assert.equal(answers[1].headers.get("idempotent-replayed"), "true");
    assert.equal(
      seen[0].headers.get("idempotency-key"),
      seen[1].headers.get("idempotency-key"),
    );
    // Network failures back off from 500 ms (× 1.1 jitter here).
    assert.deepEqual(sleeps, [550]);
  } finally {
    await t.close();
  }
});

Deno.test("getSession() retries 503 AVTR_SESSION_STATE_UNAVAILABLE after retry_after", async (ctx) => {
  const clock = new TestClock();
  const t = await sessionApp({}, { clock });
  try {
    const { client, seen, sleeps } = clientFor(t);
    const created = await client.createSession(engineBody());
    const fault = failSessionReads(t, 2);
    const status = await client.getSession(created.session_id, {
      requestId: "req-get",
    });
    assert.equal(status.status, "created");
    assert.equal(fault.left, 0);
    assert.equal(seen.length, 4);
    assert.ok(
      seen.slice(1).every((s) => s.headers.get("x-request-id") === "req-get"),
    );
    const retryAfter = ERROR_CODES.AVTR_SESSION_STATE_UNAVAILABLE.retryAfter;
    assert.deepEqual(sleeps, [retryAfter * 1100, retryAfter * 1100]);

    await ctx.step(
      "gives up after maxRetries with the service's error",
      async () => {
        failSessionReads(t, 10);
        const limited = clientFor(t, { maxRetries: 2 });
        const err = await rejects(
          limited.client.getSession(created.session_id, { requestId: "req-x" }),
        );
        assert.equal(err.status, 503);
        assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
        assert.equal(err.retry_after, retryAfter);
        assert.equal(err.request_id, "req-x");
        assert.equal(err.retryable, true);
        assert.equal(limited.seen.length, 3);
        assert.equal(limited.sleeps.length, 2);
      },
    );

    await ctx.step(
      "stops when the next wait would pass retryBudgetMs",
      async () => {
        failSessionReads(t, 10);
        const budget = clientFor(t, { retryBudgetMs: retryAfter * 1000 });
        const err = await rejects(budget.client.getSession(created.session_id));
        assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
        assert.equal(budget.seen.length, 1);
        assert.deepEqual(budget.sleeps, []);
      },
    );
  } finally {
    await t.close();
  }
});

Deno.test("getSession() retries network failures", async () => {
  const t = await sessionApp();
  try {
    const { client: setup } = clientFor(t);
    const created = await setup.createSession(engineBody());
    const { client, seen, sleeps } = clientFor(t, {
      before: (n) => {
        if (n < 2) throw new TypeError("network is unreachable");
      },
    });
    assert.equal(
      (await client.getSession(created.session_id)).status,
      "created",
    );
    assert.equal(seen.length, 3);
    assert.deepEqual(sleeps, [550, 1100]);
  } finally {
    await t.close();
  }
});

Deno.test("createApiKey() is not repeated after a network failure", async () => {
  const t = await sessionApp();
  try {
    const { client, seen, sleeps } = clientFor(t, {
      before: () => {
        throw new TypeError("network is unreachable");
      },
    });
    const err = await rejects(
      client.createApiKey({ tenant_id: "acme", scopes: ["sessions:read"] }),
    );
    assert.equal(err.code, "network_error");
    assert.equal(err.status, 0);
    assert.equal(seen.length, 1);
    assert.deepEqual(sleeps, []);
  } finally {
    await t.close();
  }
});

Deno.test("AvatarClient does not retry 400, 401, 404", async (t) => {
  const app = await sessionApp();
  try {
    await t.step(
      "400 carries code, param and the echoed request id",
      async () => {
        const { client, seen, sleeps } = clientFor(app);
        const body = engineBody();
        body.provider_config.external_engine!.url =
          "https://not-wss.example.com";
        const err = await rejects(
          client.createSession(body, { requestId: "req-400" }),
        );
        assert.equal(err.status, 400);
        assert.equal(err.code, "AVTR_PROVIDER_MISCONFIGURED");
        assert.equal(err.param, "provider_config.external_engine.url");
        assert.equal(err.request_id, "req-400");
        assert.equal(err.retry_after, undefined);
        assert.equal(err.retryable, false);
        assert.ok(err.message.length > 0);
        assert.match(err.doc_url ?? "", /^https:\/\//);
        assert.equal(seen.length, 1);
        assert.deepEqual(sleeps, []);
      },
    );
    await t.step("401", async () => {
      const { client, seen, sleeps } = clientFor(app, {
        apiKey: "avk_nope_nope",
      });
      const err = await rejects(client.createSession(engineBody()));
      assert.equal(err.status, 401);
      assert.equal(err.code, "AVTR_AUTH_INVALID_KEY");
      assert.equal(seen.length, 1);
      assert.deepEqual(sleeps, []);
    });
    await t.step("404", async () => {
      const { client, seen, sleeps } = clientFor(app);
      const err = await rejects(client.getSession("session:absent"));
      assert.equal(err.status, 404);
      assert.equal(err.code, "AVTR_SESSION_NOT_FOUND");
      assert.equal(seen.length, 1);
      assert.deepEqual(sleeps, []);
      const end = await rejects(client.endSession("session:absent"));
      assert.equal(end.code, "AVTR_SESSION_NOT_FOUND");
    });
  } finally {
    await app.close();
  }
});

Deno.test("endSession() resolves a 409 to an ended result without retrying", async (t) => {
  const app = await sessionApp();
  try {
    const { client, seen, sleeps } = clientFor(app);
    const ended = { status: "ended", ended_at: 0 };

    await t.step("AVTR_SESSION_CONFLICT (created)", async () => {
      const { session_id } = await client.createSession(engineBody());
      const before = seen.length;
      assert.deepEqual(await client.endSession(session_id), {
        session_id,
        ...ended,
      });
      assert.equal(seen.length, before + 1);
      // The session was not touched.
      assert.equal((await client.getSession(session_id)).status, "created");
    });

    await t.step("AVTR_SESSION_ENDED (ended), force=true sent", async () => {
      const { session_id } = await client.createSession(engineBody());
      await driveTo(app.app.deps, session_id, "active");
      const first = await client.endSession(session_id, { force: true });
      assert.equal(first.status, "ended");
      assert.ok(first.ended_at > 0);
      assert.equal(seen.at(-1)!.url.search, "?force=true");
      const before = seen.length;
      assert.deepEqual(await client.endSession(session_id), {
        session_id,
        ...ended,
      });
      assert.equal(seen.length, before + 1);
    });

    await t.step(
      "the 409 body itself is the service's flat error",
      async () => {
        const { session_id } = await client.createSession(engineBody());
        const res = await app.request(
          `/v1/sessions/${session_id}/end`,
          {
            method: "POST",
            headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
          },
        );
        assert.equal(res.status, 409);
        assert.equal(
          errorBodySchema.parse(await res.json()).code,
          "AVTR_SESSION_CONFLICT",
        );
      },
    );
    assert.deepEqual(sleeps, []);
  } finally {
    await app.close();
  }
});
