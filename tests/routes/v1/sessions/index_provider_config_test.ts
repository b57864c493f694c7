/**
 * POST /v1/sessions refuses each provider's malformed provider_config with its code and
 * param (vendor_a_realtime, vendor_b, external_engine, vendor_c), and checks a vendor_c
 * signed_url against the configured host. The body's shape and other fields:
 * index_test.ts.
 */
import assert from "node:assert/strict";
import {
  assertError,
  assertRefusesEach,
  createOk,
  postCreate,
  type RefusedCase,
  sessionApp,
} from "./_helpers.ts";

const MISCONF = "AVTR_PROVIDER_MISCONFIGURED";

const PROVIDER_MATRIX: RefusedCase[] = [
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
  ...((): RefusedCase[] => {
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
];

Deno.test("POST /v1/sessions refuses each provider's malformed provider_config with its code and param", (t) =>
  assertRefusesEach(t, PROVIDER_MATRIX));

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
