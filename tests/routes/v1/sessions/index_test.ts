import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY, TestClock } from "../../../_helpers.ts";
import type { ErrorCode } from "../../../../lib/api/errors.ts";
import { PROVIDER_TYPES } from "../../../../lib/providers/port.ts";
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

const MISCONF = "AVTR_PROVIDER_MISCONFIGURED";
const INVALID = "AVTR_REQUEST_INVALID";

/** [name, body, code, param] */
const MATRIX: [string, unknown, ErrorCode, string | undefined][] = [
  // provider_type
  [
    "provider_type missing",
    { provider_config: { vendor_b: {} } },
    MISCONF,
    "provider_type",
  ],
  [
    "provider_type unknown",
    { ...validBody(), provider_type: "vendor_z" },
    MISCONF,
    "provider_type",
  ],
  [
    "provider_type not a string",
    { ...validBody(), provider_type: 3 },
    MISCONF,
    "provider_type",
  ],
  // provider_config structure
  [
    "provider_config missing",
    { provider_type: "vendor_b" },
    MISCONF,
    "provider_config",
  ],
  [
    "provider_config an array",
    { provider_type: "vendor_b", provider_config: [] },
    MISCONF,
    "provider_config",
  ],
  [
    "provider_config a string",
    { provider_type: "vendor_b", provider_config: "x" },
    MISCONF,
    "provider_config",
  ],
  [
    "provider_config empty",
    { provider_type: "vendor_b", provider_config: {} },
    MISCONF,
    "provider_config.vendor_b",
  ],
  [
    "provider_config key for another provider",
    {
      provider_type: "vendor_b",
      provider_config: { vendor_c: { agent_id: "a" } },
    },
    MISCONF,
    "provider_config.vendor_c",
  ],
  [
    "provider_config with several keys",
    {
      provider_type: "vendor_b",
      provider_config: {
        vendor_b: { access_token: "t", agent_id: "a" },
        vendor_c: { agent_id: "a" },
      },
    },
    MISCONF,
    "provider_config",
  ],
  [
    "provider_config unknown key",
    { provider_type: "vendor_b", provider_config: { vendor_q: {} } },
    MISCONF,
    "provider_config.vendor_q",
  ],
  [
    "provider_connection_id",
    { ...validBody(), provider_connection_id: "pc_1" },
    MISCONF,
    "provider_connection_id",
  ],
  [
    "provider_connection_id alone",
    { provider_connection_id: "pc_1" },
    MISCONF,
    "provider_connection_id",
  ],
  // vendor_a_realtime
  [
    "vendor_a client_secret missing",
    {
      provider_type: "vendor_a_realtime",
      provider_config: { vendor_a_realtime: {} },
    },
    MISCONF,
    "provider_config.vendor_a_realtime.client_secret",
  ],
  [
    "vendor_a client_secret empty",
    {
      provider_type: "vendor_a_realtime",
      provider_config: { vendor_a_realtime: { client_secret: "" } },
    },
    MISCONF,
    "provider_config.vendor_a_realtime.client_secret",
  ],
  [
    "vendor_a unknown field",
    {
      provider_type: "vendor_a_realtime",
      provider_config: {
        vendor_a_realtime: { client_secret: "s", model: "m" },
      },
    },
    MISCONF,
    "provider_config.vendor_a_realtime.model",
  ],
  [
    "vendor_a config not an object",
    {
      provider_type: "vendor_a_realtime",
      provider_config: { vendor_a_realtime: "s" },
    },
    MISCONF,
    "provider_config.vendor_a_realtime",
  ],
  // vendor_b
  [
    "vendor_b access_token missing",
    {
      provider_type: "vendor_b",
      provider_config: { vendor_b: { agent_id: "a" } },
    },
    MISCONF,
    "provider_config.vendor_b.access_token",
  ],
  [
    "vendor_b agent_id missing",
    {
      provider_type: "vendor_b",
      provider_config: { vendor_b: { access_token: "t" } },
    },
    MISCONF,
    "provider_config.vendor_b.agent_id",
  ],
  [
    "vendor_b agent_id empty",
    {
      provider_type: "vendor_b",
      provider_config: { vendor_b: { access_token: "t", agent_id: "" } },
    },
    MISCONF,
    "provider_config.vendor_b.agent_id",
  ],
  [
    "vendor_b unknown field",
    {
      provider_type: "vendor_b",
      provider_config: {
        vendor_b: { access_token: "t", agent_id: "a", region: "eu" },
      },
    },
    MISCONF,
    "provider_config.vendor_b.region",
  ],
  // external_engine
  ...((): [string, unknown, ErrorCode, string][] => {
    const ee = (cfg: Record<string, unknown>) => ({
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://engine.example.com/ws",
          auth_headers: {},
          ...cfg,
        },
      },
    });
    const p = "provider_config.external_engine";
    return [
      [
        "external_engine url ws://",
        ee({ url: "ws://engine.example.com/ws" }),
        MISCONF,
        `${p}.url`,
      ],
      [
        "external_engine url https://",
        ee({ url: "https://engine.example.com/ws" }),
        MISCONF,
        `${p}.url`,
      ],
      [
        "external_engine url not a URL",
        ee({ url: "wss://" }),
        MISCONF,
        `${p}.url`,
      ],
      [
        "external_engine url missing",
        ee({ url: undefined }),
        MISCONF,
        `${p}.url`,
      ],
      [
        "external_engine auth_headers missing",
        ee({ auth_headers: undefined }),
        MISCONF,
        `${p}.auth_headers`,
      ],
      [
        "external_engine auth_headers an array",
        ee({ auth_headers: [] }),
        MISCONF,
        `${p}.auth_headers`,
      ],
      [
        "external_engine auth_headers value not a string",
        ee({ auth_headers: { "x-key": 5 } }),
        MISCONF,
        `${p}.auth_headers.x-key`,
      ],
      [
        "external_engine auth_headers bad name",
        ee({ auth_headers: { "bad name": "v" } }),
        MISCONF,
        `${p}.auth_headers.bad name`,
      ],
      [
        "external_engine auth_headers CRLF value",
        ee({ auth_headers: { "x-key": "a\r\nb: c" } }),
        MISCONF,
        `${p}.auth_headers.x-key`,
      ],
      [
        "external_engine user_sample_rate not an integer",
        ee({ user_sample_rate: 16000.5 }),
        MISCONF,
        `${p}.user_sample_rate`,
      ],
      [
        "external_engine user_sample_rate too low",
        ee({ user_sample_rate: 7999 }),
        MISCONF,
        `${p}.user_sample_rate`,
      ],
      [
        "external_engine user_sample_rate too high",
        ee({ user_sample_rate: 48001 }),
        MISCONF,
        `${p}.user_sample_rate`,
      ],
      [
        "external_engine unknown field",
        ee({ model: "x" }),
        MISCONF,
        `${p}.model`,
      ],
    ];
  })(),
  // vendor_c
  [
    "vendor_c agent_id missing",
    { provider_type: "vendor_c", provider_config: { vendor_c: {} } },
    MISCONF,
    "provider_config.vendor_c.agent_id",
  ],
  [
    "vendor_c api_key empty",
    {
      provider_type: "vendor_c",
      provider_config: { vendor_c: { agent_id: "a", api_key: "" } },
    },
    MISCONF,
    "provider_config.vendor_c.api_key",
  ],
  [
    "vendor_c signed_url https",
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: {
          agent_id: "a",
          signed_url: "https://x.example/v1/convai/conversation",
        },
      },
    },
    MISCONF,
    "provider_config.vendor_c.signed_url",
  ],
  [
    "vendor_c signed_url wrong path",
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: { agent_id: "a", signed_url: "wss://x.example/v2/other" },
      },
    },
    MISCONF,
    "provider_config.vendor_c.signed_url",
  ],
  [
    "vendor_c signed_url on a foreign host",
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: {
          agent_id: "a",
          signed_url: "wss://evil.example/v1/convai/conversation?token=t",
        },
      },
    },
    MISCONF,
    "provider_config.vendor_c.signed_url",
  ],
  [
    "vendor_c signed_url on another port of the provider's host",
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: {
          agent_id: "a",
          signed_url: "wss://api.elevenlabs.io:8443/v1/convai/conversation",
        },
      },
    },
    MISCONF,
    "provider_config.vendor_c.signed_url",
  ],
  [
    "vendor_c signed_url fault beside an unknown avatar",
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: {
          agent_id: "a",
          signed_url: "wss://evil.example/v1/convai/conversation",
        },
      },
      avatar_config: { avatar_id: "nobody" },
    },
    MISCONF,
    "provider_config.vendor_c.signed_url",
  ],
  [
    "vendor_c unknown field",
    {
      provider_type: "vendor_c",
      provider_config: { vendor_c: { agent_id: "a", voice: "v" } },
    },
    MISCONF,
    "provider_config.vendor_c.voice",
  ],
  // other fields
  [
    "unknown top-level field",
    { ...validBody(), colour: "blue" },
    INVALID,
    "colour",
  ],
  [
    "transport unknown",
    { ...validBody(), transport: "carrier_pigeon" },
    INVALID,
    "transport",
  ],
  [
    "transport not a string",
    { ...validBody(), transport: 1 },
    INVALID,
    "transport",
  ],
  [
    "webhook_url http",
    { ...validBody(), webhook_url: "http://hooks.example.com/x" },
    INVALID,
    "webhook_url",
  ],
  [
    "webhook_url not a string",
    { ...validBody(), webhook_url: 7 },
    INVALID,
    "webhook_url",
  ],
  [
    "webhook_url https without host",
    { ...validBody(), webhook_url: "https://" },
    INVALID,
    "webhook_url",
  ],
  [
    "avatar_config not an object",
    { ...validBody(), avatar_config: "ava" },
    INVALID,
    "avatar_config",
  ],
  [
    "avatar_config unknown field",
    { ...validBody(), avatar_config: { pose: "x" } },
    INVALID,
    "avatar_config.pose",
  ],
  [
    "avatar_config avatar_id empty",
    { ...validBody(), avatar_config: { avatar_id: "" } },
    INVALID,
    "avatar_config.avatar_id",
  ],
  [
    "avatar_config bg_id not a string",
    { ...validBody(), avatar_config: { bg_id: 1 } },
    INVALID,
    "avatar_config.bg_id",
  ],
  [
    "unknown avatar_id",
    { ...validBody(), avatar_config: { avatar_id: "nobody" } },
    "AVTR_RENDER_MISCONFIGURED",
    "avatar_config.avatar_id",
  ],
  [
    "unknown bg_id",
    { ...validBody(), avatar_config: { bg_id: "moon" } },
    "AVTR_RENDER_MISCONFIGURED",
    "avatar_config.bg_id",
  ],
  [
    "webrtc_sfu without SFU",
    { ...validBody(), transport: "webrtc_sfu" },
    "AVTR_SFU_NOT_CONFIGURED",
    "transport",
  ],
  // precedence: a provider fault wins over another field's
  [
    "provider fault beside an unknown field",
    {
      ...validBody(),
      colour: "x",
      provider_config: { vendor_b: { agent_id: "a" } },
    },
    MISCONF,
    "provider_config.vendor_b.access_token",
  ],
];

Deno.test("POST /v1/sessions refuses each invalid body with its code and param", async (t) => {
  const app = await sessionApp();
  try {
    for (const [name, body, code, param] of MATRIX) {
      await t.step(name, async () => {
        await assertError(await postCreate(app, body), code, param);
      });
    }
    await t.step("nothing was stored and no credential is held", async () => {
      const entries = await Array.fromAsync(
        app.app.deps.kv.list({ prefix: ["sessions"] }),
      );
      assert.equal(entries.length, 0);
      assert.equal(app.app.deps.vault.size, 0);
      assert.equal(app.app.deps.renderSlots.inUse, 0);
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions checks a vendor_c signed_url against VENDOR_C_URL's host", async (t) => {
  const app = await sessionApp({
    VENDOR_C_URL: "wss://convai.internal.example/v1/convai/conversation",
  });
  const body = (signedUrl: string) => ({
    provider_type: "vendor_c",
    provider_config: { vendor_c: { agent_id: "a", signed_url: signedUrl } },
  });
  try {
    await t.step("the default host is foreign here → 400", async () => {
      const token = "sig-token-4c1d9e";
      const b = await assertError(
        await postCreate(
          app,
          body(
            `wss://api.elevenlabs.io/v1/convai/conversation?token=${token}`,
          ),
        ),
        MISCONF,
        "provider_config.vendor_c.signed_url",
      );
      assert.doesNotMatch(JSON.stringify(b), new RegExp(token));
      assert.doesNotMatch(JSON.stringify(b), /convai\.internal|elevenlabs/);
      assert.equal(app.app.deps.vault.size, 0);
      assert.equal(app.app.deps.renderSlots.inUse, 0);
    });
    await t.step("the configured host is accepted", async () => {
      const signed =
        "wss://convai.internal.example/v1/convai/conversation?token=ok";
      const id = await createOk(app, body(signed));
      const creds = app.app.deps.vault.use(id);
      assert.equal(creds?.type === "vendor_c" && creds.signed_url, signed);
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions refuses bodies that are not JSON objects", async (t) => {
  const app = await sessionApp();
  const post = (body: BodyInit, type = "application/json") =>
    app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY, { "content-type": type }),
      body,
    });
  try {
    await t.step("malformed JSON", async () => {
      await assertError(await post("{"), INVALID);
    });
    await t.step("a JSON array", async () => {
      await assertError(await post("[]"), INVALID);
    });
    await t.step("JSON null", async () => {
      await assertError(await post("null"), INVALID);
    });
    await t.step("text/plain", async () => {
      await assertError(
        await post(JSON.stringify(validBody()), "text/plain"),
        INVALID,
      );
    });
    await t.step("empty body", async () => {
      await assertError(await post(""), INVALID);
    });
    await t.step("over 64 KiB → 413", async () => {
      const big = { ...validBody(), pad: "x".repeat(70 * 1024) };
      await assertError(
        await post(JSON.stringify(big)),
        "AVTR_REQUEST_TOO_LARGE",
      );
    });
  } finally {
    await app.close();
  }
});

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
