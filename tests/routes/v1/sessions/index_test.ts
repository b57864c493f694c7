/**
 * POST /v1/sessions refuses what it cannot take: every invalid body with its code and
 * param (provider_type, provider_config's shape, the other fields), bodies that are not
 * JSON objects. Each provider's own provider_config: index_provider_config_test.ts; what a
 * valid create does: index_create_test.ts; limits: index_limits_test.ts.
 */
import { authJson, TEST_ADMIN_KEY } from "../../../_helpers.ts";
import {
  assertError,
  assertRefusesEach,
  type RefusedCase,
  sessionApp,
  validBody,
} from "./_helpers.ts";

const MISCONF = "AVTR_PROVIDER_MISCONFIGURED";
const INVALID = "AVTR_REQUEST_INVALID";

const MATRIX: RefusedCase[] = [
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

Deno.test("POST /v1/sessions refuses each invalid body with its code and param", (t) =>
  assertRefusesEach(t, MATRIX));

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
