/**
 * client/server.ts against the real service in-process: every call through the app's
 * handler, time driven by the test clock through the client's injected sleep.
 */
import assert from "node:assert/strict";
import type { z } from "zod";
import {
  type ApiKeyCreated,
  AvatarApiError,
  AvatarClient,
  type AvatarClientOptions,
  type ClientTokenResponse,
  type CreateApiKeyRequest,
  type CreateSessionRequest,
  type EndSessionResponse,
  externalEngineSession,
  type SessionResponse,
  type SessionStatusResponse,
  vendorARealtimeSession,
  vendorBSession,
  vendorCSession,
} from "../../client/server.ts";
import { NON_RETRYABLE_CODES, RETRYABLE_CODES } from "../../client/errors.ts";
import {
  type apiKeyCreatedSchema,
  apiKeyCreateSchema,
} from "../../lib/auth/api_keys.ts";
import { ERROR_CODES } from "../../lib/api/errors.ts";
import {
  clientTokenResponseSchema,
  type createSessionSchema,
  endSessionResponseSchema,
  errorBodySchema,
  sessionResponseSchema,
  sessionStatusResponseSchema,
} from "../../lib/api/schemas.ts";
import { TEST_ADMIN_KEY, type TestApp, TestClock } from "../_helpers.ts";
import {
  driveTo,
  sessionApp,
  tenantKey,
  validBody,
} from "../routes/v1/sessions/_helpers.ts";

// Compile-time: the client's types and the service's schemas accept each other's values.
// `deno check` (and `deno test`) fail here when either side drifts.
export function _typesAgree(
  s: {
    session: z.output<typeof sessionResponseSchema>;
    token: z.output<typeof clientTokenResponseSchema>;
    status: z.output<typeof sessionStatusResponseSchema>;
    end: z.output<typeof endSessionResponseSchema>;
    key: z.output<typeof apiKeyCreatedSchema>;
    create: z.input<typeof createSessionSchema>;
    createKey: z.input<typeof apiKeyCreateSchema>;
  },
  c: {
    session: SessionResponse;
    token: ClientTokenResponse;
    status: SessionStatusResponse;
    end: EndSessionResponse;
    key: ApiKeyCreated;
    create: CreateSessionRequest;
    createKey: CreateApiKeyRequest;
  },
): [typeof c, typeof s] {
  return [s, c];
}

interface Seen {
  method: string;
  url: URL;
  headers: Headers;
}

/** A client whose fetch is the app's handler; records requests and sleeps. */
function clientFor(
  t: TestApp,
  options: Partial<AvatarClientOptions> & {
    /** Runs before each request reaches the app; throw to fake a network failure. */
    before?: (n: number) => void;
    /** Runs after the app answered; throw to lose the answer on the way back. */
    after?: (n: number, res: Response) => void;
  } = {},
) {
  const seen: Seen[] = [];
  const sleeps: number[] = [];
  const client = new AvatarClient({
    baseUrl: "http://localhost",
    apiKey: TEST_ADMIN_KEY,
    random: () => 0.5,
    sleep: (ms) => {
      sleeps.push(ms);
      t.clock?.advance(ms);
      return Promise.resolve();
    },
    fetch: async (input, init) => {
      const req = new Request(input, init);
      const n = seen.length;
      seen.push({
        method: req.method,
        url: new URL(req.url),
        headers: req.headers,
      });
      options.before?.(n);
      const res = await t.app.handler(req);
      options.after?.(n, res);
      return res;
    },
    ...options,
  });
  return { client, seen, sleeps };
}

/** Makes `getMany` of a session key fail `times` times: the store is "down". */
function failSessionReads(t: TestApp, times: number): { left: number } {
  const state = { left: times };
  const kv = t.app.deps.kv;
  // Status reads go through `readKv` (the same handle on `:memory:`).
  t.app.deps.kv = t.app.deps.readKv = new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany") {
        return (
          keys: Deno.KvKey[],
          opts?: { consistency?: Deno.KvConsistencyLevel },
        ) => {
          if (state.left > 0 && keys.some((k) => k[0] === "sessions")) {
            state.left--;
            return Promise.reject(new Error("injected KV failure"));
          }
          return target.getMany(keys, opts);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return state;
}

function engineBody(): CreateSessionRequest {
  return validBody("external_engine") as unknown as CreateSessionRequest;
}

async function rejects(p: Promise<unknown>): Promise<AvatarApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof AvatarApiError, String(err));
    return err;
  }
  assert.fail("expected the call to fail");
}

Deno.test("client/errors.ts lists every service code with its retryability", () => {
  const service = Object.entries(ERROR_CODES);
  assert.deepEqual(
    [...RETRYABLE_CODES].sort(),
    service.filter(([, i]) => i.retryable).map(([c]) => c).sort(),
  );
  assert.deepEqual(
    [...NON_RETRYABLE_CODES].sort(),
    service.filter(([, i]) => !i.retryable).map(([c]) => c).sort(),
  );
});

Deno.test("AvatarClient's six calls return what the service's schemas accept", async (ctx) => {
  const t = await sessionApp();
  try {
    const { client, seen } = clientFor(t);
    const created = await client.createSession(engineBody());
    sessionResponseSchema.parse(created);
    const status = await client.getSession(created.session_id);
    sessionStatusResponseSchema.parse(status);
    assert.equal(status.status, "created");
    const token = await client.createClientToken(created.session_id);
    clientTokenResponseSchema.parse(token);
    await driveTo(t.app.deps, created.session_id, "active");
    const ended = await client.endSession(created.session_id);
    endSessionResponseSchema.parse(ended);
    assert.equal(ended.status, "ended");
    assert.ok(ended.ended_at > 0);
    const key = await client.createApiKey({
      tenant_id: "acme",
      scopes: ["sessions:read"],
      name: "reader",
    });
    assert.equal(key.tenant_id, "acme");
    assert.ok(key.api_key.length > 0);
    assert.equal(await client.revokeApiKey(key.key_id), undefined);
    assert.deepEqual(
      seen.map((s) => `${s.method} ${s.url.pathname}`),
      [
        "POST /v1/sessions",
        `GET /v1/sessions/${encodeURIComponent(created.session_id)}`,
        `POST /v1/sessions/${
          encodeURIComponent(created.session_id)
        }/client-token`,
        `POST /v1/sessions/${encodeURIComponent(created.session_id)}/end`,
        "POST /v1/api-keys",
        `DELETE /v1/api-keys/${key.key_id}`,
      ],
    );
    assert.equal(
      seen[0].headers.get("authorization"),
      `Bearer ${TEST_ADMIN_KEY}`,
    );

    await ctx.step(
      "a revoked key is refused with 401, not retried",
      async () => {
        const revoked = clientFor(t, { apiKey: key.api_key });
        const err = await rejects(
          revoked.client.getSession(created.session_id),
        );
        assert.equal(err.status, 401);
        assert.equal(err.code, "AVTR_AUTH_INVALID_KEY");
        assert.equal(revoked.seen.length, 1);
        assert.deepEqual(revoked.sleeps, []);
      },
    );
  } finally {
    await t.close();
  }
});

Deno.test("AvatarClient sends the key as x-api-key when asked", async () => {
  const t = await sessionApp();
  try {
    const key = await tenantKey(t.app.deps, "acme");
    const { client, seen } = clientFor(t, {
      apiKey: key,
      authHeader: "x-api-key",
    });
    const created = await client.createSession(engineBody());
    assert.equal(
      (await client.getSession(created.session_id)).status,
      "created",
    );
    assert.equal(seen[0].headers.get("x-api-key"), key);
    assert.equal(seen[0].headers.get("authorization"), null);
  } finally {
    await t.close();
  }
});

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

Deno.test("provider helpers build create bodies the service accepts, one provider key each", async (t) => {
  const { createSessionSchema } = await import("../../lib/api/schemas.ts");
  const options = {
    transport: "websocket_fmp4" as const,
    avatar_config: { avatar_id: "mira" },
  };
  const cases: Array<[string, CreateSessionRequest]> = [
    [
      "vendor_a_realtime",
      vendorARealtimeSession({ client_secret: "ek_abc" }, options),
    ],
    [
      "vendor_b",
      vendorBSession({ access_token: "tok", agent_id: "agent_1" }, options),
    ],
    [
      "vendor_c",
      vendorCSession({
        agent_id: "agent_2",
        signed_url:
          "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=agent_2&conversation_signature=s",
      }, options),
    ],
    [
      "external_engine",
      externalEngineSession({
        url: "wss://engine.example.com/ws",
        auth_headers: { "x-engine-key": "k" },
        user_sample_rate: 16000,
      }, options),
    ],
  ];
  for (const [type, body] of cases) {
    await t.step(type, () => {
      assert.equal(body.provider_type, type);
      assert.deepEqual(Object.keys(body.provider_config), [type]);
      assert.equal(body.transport, "websocket_fmp4");
      assert.deepEqual(body.avatar_config, { avatar_id: "mira" });
      const parsed = createSessionSchema.safeParse(body);
      assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
    });
  }
  await t.step("a missing credential is refused before any call", () => {
    assert.throws(
      () => vendorARealtimeSession({ client_secret: "" }),
      TypeError,
    );
    assert.throws(() => vendorCSession({ agent_id: "" }), TypeError);
  });
});

Deno.test("a helper's body creates a session through AvatarClient", async () => {
  const t = await sessionApp();
  try {
    const { client } = clientFor(t);
    const session = await client.createSession(
      vendorBSession({ access_token: "tok_test", agent_id: "agent_1" }),
    );
    assert.equal(session.status, "created");
    assert.equal(
      (await client.getSession(session.session_id)).provider_type,
      "vendor_b",
    );
  } finally {
    await t.close();
  }
});
