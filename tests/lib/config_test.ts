import assert from "node:assert/strict";
import { ConfigError, DEFAULT_KV_PATH, loadConfig } from "../../lib/config.ts";

Deno.test("loadConfig() puts KV in a local file by default, and in the managed store on Deploy", () => {
  assert.equal(loadConfig({}).kvPath, DEFAULT_KV_PATH);
  assert.match(DEFAULT_KV_PATH, /^\.\/data\//);
  assert.equal(loadConfig({ DENO_DEPLOYMENT_ID: "abc" }).kvPath, undefined);
  assert.equal(loadConfig({ KV_PATH: ":memory:" }).kvPath, ":memory:");
});

Deno.test("loadConfig() reads TOKEN_SECRET: generated when unset, unusable when short", () => {
  const generated = loadConfig({});
  assert.equal(generated.tokenSecretGenerated, true);
  assert.equal(generated.tokenSecret?.length, 32);
  assert.equal(loadConfig({ TOKEN_SECRET: "short" }).tokenSecret, null);
  assert.equal(loadConfig({ TOKEN_SECRET: "" }).tokenSecret, null);
  assert.equal(
    loadConfig({ TOKEN_SECRET: "x".repeat(32) }).tokenSecret?.length,
    32,
  );
});

Deno.test("loadConfig() refuses malformed values with a ConfigError naming the variable", async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: "eighty" }, /PORT/],
    [{ RATE_LIMIT_PER_MINUTE: "0" }, /RATE_LIMIT_PER_MINUTE/],
    [
      { ALLOW_PRIVATE_NETWORK_TARGETS: "maybe" },
      /ALLOW_PRIVATE_NETWORK_TARGETS/,
    ],
    [{ DOCS_BASE_URL: "http://docs.example.com" }, /DOCS_BASE_URL/],
    [{ IDP_ISSUER: "https://idp.example.com" }, /IDP_JWKS/],
    [{ SFU_URL: "wss://sfu.example.com", ICE_SERVERS: "[" }, /ICE_SERVERS/],
  ];
  for (const [env, message] of cases) {
    await t.step(Object.keys(env).join(","), () => {
      assert.throws(
        () => loadConfig(env),
        (err) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }
});
