/**
 * client/server.ts against the real service in-process: every call through the app's
 * handler, time driven by the test clock through the client's injected sleep.
 */
import assert from "node:assert/strict";
import type { z } from "zod";
import {
  type ApiKeyCreated,
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
import { ERROR_CODES } from "../../lib/errors.ts";
import {
  clientTokenResponseSchema,
  type createSessionSchema,
  endSessionResponseSchema,
  sessionResponseSchema,
  sessionStatusResponseSchema,
} from "../../lib/api/schemas.ts";
import { TEST_ADMIN_KEY } from "../_helpers.ts";
import {
  driveTo,
  sessionApp,
  tenantKey,
} from "../routes/v1/sessions/_helpers.ts";
import { clientFor, engineBody, rejects } from "./_helpers.ts";

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
