/**
 * POST /v1/sessions refuses what it cannot take: every invalid body with its code and
 * param, bodies that are not JSON objects, a vendor_c signed_url off its host. What a
 * valid create does: index_create_test.ts; limits: index_limits_test.ts.
 */
import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY } from "../../../_helpers.ts";
import type { ErrorCode } from "../../../../lib/api/errors.ts";
import {
  assertError,
  createOk,
  postCreate,
  sessionApp,
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
