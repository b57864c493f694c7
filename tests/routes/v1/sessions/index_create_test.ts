/**
 * POST /v1/sessions with valid bodies: a session for every provider type, authentication
 * first, the 503s (token secret, render capacity, provider), render reservations, and the
 * vendor_c pre-flight. Invalid bodies: index_test.ts.
 */
import assert from "node:assert/strict";
import { TestClock } from "../../../_helpers.ts";
import { PROVIDER_TYPES } from "../../../../lib/ports/providers.ts";
import { sessionResponseSchema } from "../../../../lib/api/schemas.ts";
import { readSession } from "../../../../lib/sessions.ts";
import { verifyToken } from "../../../../lib/auth/tokens.ts";
import {
  fakeSignedUrl,
  startVendorCApi,
} from "../../../lib/providers/_vendor_c_api.ts";
import {
  assertError,
  createOk,
  postCreate,
  sessionApp,
  tenantKey,
  validBody,
} from "./_helpers.ts";

Deno.test("POST /v1/sessions creates a session for every provider type", async (t) => {
  const app = await sessionApp({}, { clock: new TestClock() });
  try {
    for (const type of PROVIDER_TYPES) {
      await t.step(type, async () => {
        const res = await postCreate(app, validBody(type));
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("cache-control"), "no-store");
        assert.equal(res.headers.get("idempotent-replayed"), null);
        const body = sessionResponseSchema.parse(await res.json());
        assert.equal(body.status, "created");
        assert.equal(body.transport, "websocket_fmp4");
        assert.equal(body.stream_metadata.sfu_endpoint, null);
        assert.deepEqual(body.stream_metadata.ice_servers, []);
        assert.equal(body.expires_at, app.app.deps.now() + 5 * 60 * 1000);
        assert.notEqual(body.client_token, body.stream_metadata.session_token);
        const deps = app.app.deps;
        assert.deepEqual(
          verifyToken(deps, body.client_token, {
            sessionId: body.session_id,
            purposes: ["client"],
          }).ok,
          true,
        );
        assert.deepEqual(
          verifyToken(deps, body.stream_metadata.session_token, {
            sessionId: body.session_id,
            purposes: ["session"],
          }).ok,
          true,
        );
        const rec = await readSession(deps, body.session_id);
        assert.equal(rec?.provider_type, type);
        assert.equal(rec?.tenant_id, "admin");
        assert.equal(rec?.owner, deps.instanceId);
        assert.equal(rec?.avatar_id, "ava");
        assert.equal(rec?.bg_id, "studio");
        assert.deepEqual(rec?.timeline.map((x) => x.status), ["created"]);
        assert.equal(deps.vault.use(body.session_id)?.type, type);
        assert.equal(deps.renderSlots.has(body.session_id), true);
      });
    }
    await t.step(
      "external_engine user_sample_rate defaults to 24000",
      async () => {
        const id = await createOk(app, validBody("external_engine"));
        const creds = app.app.deps.vault.use(id);
        assert.equal(creds?.type, "external_engine");
        assert.equal(
          creds?.type === "external_engine" && creds.user_sample_rate,
          24000,
        );
      },
    );
    await t.step("avatar_config and webhook_url are kept", async () => {
      const id = await createOk(app, {
        ...validBody(),
        avatar_config: { avatar_id: "leo", bg_id: "sunset" },
        webhook_url: "https://hooks.example.com/avatar",
        transport: "websocket_fmp4",
      });
      const rec = await readSession(app.app.deps, id);
      assert.equal(rec?.avatar_id, "leo");
      assert.equal(rec?.bg_id, "sunset");
      assert.equal(rec?.webhook_url, "https://hooks.example.com/avatar");
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions authenticates before anything else", async (t) => {
  const app = await sessionApp();
  try {
    await t.step("no credential → 401", async () => {
      const res = await app.request("/v1/sessions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{",
      });
      await assertError(res, "AVTR_AUTH_MISSING_CREDENTIALS");
    });
    await t.step("unknown key → 401", async () => {
      await assertError(
        await postCreate(app, validBody(), { key: "avk_nope_nope" }),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step("read-only key → 403", async () => {
      const key = await tenantKey(app.app.deps, "acme", ["sessions:read"]);
      await assertError(
        await postCreate(app, validBody(), { key }),
        "AVTR_AUTH_MISSING_SCOPE",
      );
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions answers 503 AVTR_SESSION_STATE_UNAVAILABLE when the token secret is unusable", async () => {
  const app = await sessionApp({ TOKEN_SECRET: "too-short" });
  try {
    await assertError(
      await postCreate(app, validBody()),
      "AVTR_SESSION_STATE_UNAVAILABLE",
    );
    assert.equal(app.app.deps.vault.size, 0);
    assert.equal(app.app.deps.renderSlots.inUse, 0);
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions answers 503 AVTR_RENDER_CAPACITY when no render slot is free", async () => {
  const app = await sessionApp({ RENDER_MAX_SESSIONS: "2" });
  try {
    await createOk(app);
    await createOk(app, validBody(), await tenantKey(app.app.deps, "t2"));
    const body = await assertError(
      await postCreate(app, validBody(), {
        key: await tenantKey(app.app.deps, "t3"),
      }),
      "AVTR_RENDER_CAPACITY",
    );
    assert.ok(body.retry_after! >= 1 && body.retry_after! <= 30);
    assert.equal(app.app.deps.vault.size, 2);
    const entries = await Array.fromAsync(
      app.app.deps.kv.list({ prefix: ["sessions"] }),
    );
    assert.equal(entries.length, 2);
  } finally {
    await app.close();
  }
});

Deno.test("render reservations: one tenant's unconnected sessions hold half of the slots at most, and lapse after RENDER_RESERVATION_S", async () => {
  const clock = new TestClock();
  const app = await sessionApp({ RENDER_MAX_SESSIONS: "4" }, { clock });
  const deps = app.app.deps;
  try {
    const mine = [await createOk(app), await createOk(app)];
    // The four requests: the third and fourth are refused for this tenant …
    for (let i = 0; i < 2; i++) {
      await assertError(
        await postCreate(app, validBody()),
        "AVTR_RENDER_CAPACITY",
      );
    }
    // … while another tenant still creates.
    const other = await tenantKey(deps, "other");
    await createOk(app, validBody(), other);
    assert.equal(deps.renderSlots.inUse, 3);
    // 30 s without a media socket: the leases lapse, the sessions stay created.
    clock.advance(30_000);
    assert.equal(deps.renderSlots.inUse, 0);
    for (const id of mine) {
      assert.equal((await readSession(deps, id))!.status, "created");
    }
    await createOk(app);
    await createOk(app);
    assert.equal(deps.renderSlots.inUse, 2);
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions maps vendor_c pre-flight failures and frees what it took", async (t) => {
  const api = startVendorCApi("ok");
  const app = await sessionApp({
    VENDOR_C_API_URL: api.origin,
    START_TIMEOUT_MS: "300",
  });
  const deps = app.app.deps;
  const body = {
    provider_type: "vendor_c",
    provider_config: {
      vendor_c: { agent_id: "agent_p", api_key: "xi-KEY-route" },
    },
  };
  const nothingHeld = async () => {
    assert.equal(deps.vault.size, 0);
    assert.equal(deps.renderSlots.inUse, 0);
    const entries = await Array.fromAsync(
      deps.kv.list({ prefix: ["sessions"] }),
    );
    assert.equal(entries.length, 0);
  };
  try {
    await t.step("upstream refusal → 502", async () => {
      api.mode = "error";
      const b = await assertError(
        await postCreate(app, body),
        "AVTR_PROVIDER_DOWNSTREAM_FAILED",
      );
      assert.doesNotMatch(JSON.stringify(b), /KEY/);
      await nothingHeld();
    });
    await t.step("start timeout → 504", async () => {
      api.mode = "hold";
      await assertError(await postCreate(app, body), "AVTR_PROVIDER_TIMEOUT");
      api.release();
      await nothingHeld();
    });
    await t.step("ok → the minted URL is held in the vault", async () => {
      api.mode = "ok";
      const id = await createOk(app, body);
      const creds = deps.vault.use(id);
      assert.equal(
        creds?.type === "vendor_c" && creds.signed_url,
        fakeSignedUrl("agent_p"),
      );
    });
  } finally {
    await app.close();
    await api.close();
  }
});

Deno.test("POST /v1/sessions answers 503 AVTR_PROVIDER_UNAVAILABLE when the provider is unreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const app = await sessionApp({
    VENDOR_C_API_URL: `https://localhost:${port}`,
  });
  try {
    await assertError(
      await postCreate(app, {
        provider_type: "vendor_c",
        provider_config: { vendor_c: { agent_id: "a", api_key: "k" } },
      }),
      "AVTR_PROVIDER_UNAVAILABLE",
    );
    assert.equal(app.app.deps.renderSlots.inUse, 0);
  } finally {
    await app.close();
  }
});
