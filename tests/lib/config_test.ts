import assert from "node:assert/strict";
import {
  ConfigError,
  DEFAULT_DOCS_BASE_URL,
  DEFAULT_KV_PATH,
  loadConfig,
} from "../../lib/config.ts";

Deno.test("loadConfig() puts KV in a local file by default, and in the managed store on Deploy", () => {
  assert.equal(loadConfig({}).kvPath, DEFAULT_KV_PATH);
  assert.match(DEFAULT_KV_PATH, /^\.\/data\//);
  assert.equal(loadConfig({ DENO_DEPLOYMENT_ID: "abc" }).kvPath, undefined);
  assert.equal(loadConfig({ KV_PATH: ":memory:" }).kvPath, ":memory:");
});

Deno.test("loadConfig() reads HOST, the listen address: every IPv4 interface by default", () => {
  assert.equal(loadConfig({}).host, "0.0.0.0");
  assert.equal(loadConfig({ HOST: "" }).host, "0.0.0.0");
  for (
    const host of ["127.0.0.1", "::", "::1", "localhost", "node-1.internal"]
  ) {
    assert.equal(loadConfig({ HOST: host }).host, host);
  }
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

const JANUS = "http://127.0.0.1:8088/janus";
const SFU_KEYS = { SFU_API_SECRET: "token", SFU_API_KEY: "key" };

Deno.test("loadConfig() reads the SFU variables (DECISIONS 11)", () => {
  assert.equal(loadConfig({}).sfu, null);
  const c = loadConfig({
    SFU_URL: JANUS + "/",
    ...SFU_KEYS,
    ICE_SERVERS: '[{"urls":["turn:turn.example.com:3478"]}]',
    TURN_SECRET: "s3cret",
  });
  assert.deepEqual(c.sfu, { url: JANUS, apiSecret: "token", apiKey: "key" });
  assert.deepEqual(c.ice, {
    servers: [{ urls: ["turn:turn.example.com:3478"] }],
    turnSecret: "s3cret",
  });
  // A control plane hands out ICE servers without an SFU of its own.
  assert.deepEqual(
    loadConfig({ ICE_SERVERS: '[{"urls":"stun:stun.example.com"}]' }).ice
      .servers,
    [{ urls: "stun:stun.example.com" }],
  );
});

Deno.test("loadConfig() reads the hosting role: one process by default; control and media need NODE_SECRET", () => {
  const one = loadConfig({});
  assert.equal(one.role, "all");
  assert.equal(one.nodeSecret, undefined);
  assert.equal(one.heartbeatMs, 10_000);
  const secret = "n".repeat(32);
  for (const role of ["control", "media"]) {
    const c = loadConfig({ SERVICE_ROLE: role, NODE_SECRET: secret });
    assert.equal(c.role, role);
    assert.equal(c.nodeSecret?.length, 32);
  }
  assert.equal(loadConfig({ NODE_HEARTBEAT_MS: "500" }).heartbeatMs, 500);
  assert.equal(one.drainS, 0);
  assert.equal(loadConfig({ NODE_DRAIN_S: "600" }).drainS, 600);
  assert.equal(
    loadConfig({
      SERVICE_ROLE: "media",
      NODE_SECRET: secret,
      NODE_SECRET_PREVIOUS: "p".repeat(32),
    }).nodeSecretPrevious?.length,
    32,
  );
});

Deno.test("loadConfig() refuses malformed values with a ConfigError naming the variable", async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: "eighty" }, /PORT/],
    [{ HOST: "256.0.0.1" }, /HOST/],
    [{ HOST: "example.com/x" }, /HOST/],
    [{ HOST: "fe80::1%eth0 x" }, /HOST/],
    [{ RATE_LIMIT_PER_MINUTE: "0" }, /RATE_LIMIT_PER_MINUTE/],
    [
      { ALLOW_PRIVATE_NETWORK_TARGETS: "maybe" },
      /ALLOW_PRIVATE_NETWORK_TARGETS/,
    ],
    [{ DOCS_BASE_URL: "http://docs.example.com" }, /DOCS_BASE_URL/],
    [{ IDP_ISSUER: "https://idp.example.com" }, /IDP_JWKS/],
    [
      { IDP_ISSUER: "https://idp.example.com", IDP_JWKS: '{"keys":[]}' },
      /IDP_AUDIENCE/,
    ],
    [
      {
        IDP_ISSUER: "https://idp.example.com",
        IDP_JWKS_URL: "https://idp.example.com/jwks",
        IDP_AUDIENCE: " ",
      },
      /IDP_AUDIENCE/,
    ],
    [{ ADMIN_API_KEY: "k".repeat(31) }, /ADMIN_API_KEY.*32/],
    [{ SFU_URL: "wss://sfu.example.com", ...SFU_KEYS }, /SFU_URL/],
    [{ SFU_URL: "http://127.0.0.1:8088/janus" }, /SFU_API_SECRET/],
    [{ SFU_URL: JANUS, ...SFU_KEYS, ICE_SERVERS: "[" }, /ICE_SERVERS/],
    [
      { SFU_URL: JANUS, ...SFU_KEYS, ICE_SERVERS: '[{"urls":"http://x"}]' },
      /ICE_SERVERS/,
    ],
    [{ SERVICE_ROLE: "edge" }, /SERVICE_ROLE/],
    [{ SERVICE_ROLE: "media" }, /NODE_SECRET/],
    [{ SERVICE_ROLE: "control", NODE_SECRET: "s".repeat(31) }, /NODE_SECRET/],
    [{ NODE_HEARTBEAT_MS: "50" }, /NODE_HEARTBEAT_MS/],
    [{ NODE_DRAIN_S: "-1" }, /NODE_DRAIN_S/],
    [{
      SERVICE_ROLE: "media",
      NODE_SECRET: "s".repeat(32),
      NODE_SECRET_PREVIOUS: "short",
    }, /NODE_SECRET_PREVIOUS/],
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

Deno.test("doc_url's base: DOCS_BASE_URL, else an https PUBLIC_URL + /docs, else the documented default", () => {
  const base = (env: Record<string, string>) => {
    const c = loadConfig(env);
    return [c.docsBaseUrl, c.docsBaseIsDefault];
  };
  assert.deepEqual(base({}), [DEFAULT_DOCS_BASE_URL, true]);
  assert.deepEqual(
    base({ PUBLIC_URL: "https://avatar.example.com/" }),
    ["https://avatar.example.com/docs", false],
  );
  assert.deepEqual(
    base({ PUBLIC_URL: "https://avatar.example.com/api" }),
    ["https://avatar.example.com/api/docs", false],
  );
  // An http PUBLIC_URL cannot carry a doc_url (always https): the default stays.
  assert.deepEqual(
    base({ PUBLIC_URL: "http://avatar.example.com" }),
    [DEFAULT_DOCS_BASE_URL, true],
  );
  assert.deepEqual(
    base({
      DOCS_BASE_URL: "https://docs.example.org",
      PUBLIC_URL: "https://avatar.example.com",
    }),
    ["https://docs.example.org", false],
  );
});

Deno.test("loadConfig() reads RENDER_RESERVATION_S: 30 s by default, at least 1", () => {
  assert.equal(loadConfig({}).renderReservationS, 30);
  assert.equal(loadConfig({ RENDER_RESERVATION_S: "5" }).renderReservationS, 5);
  for (const bad of ["0", "-1", "1.5", "soon"]) {
    assert.throws(
      () => loadConfig({ RENDER_RESERVATION_S: bad }),
      (err) =>
        err instanceof ConfigError && /RENDER_RESERVATION_S/.test(err.message),
    );
  }
});

Deno.test("loadConfig() reads AVATAR_STORE_MAX_PER_TENANT: 20 by default, 0 allowed", () => {
  assert.equal(loadConfig({}).avatarStoreMaxPerTenant, 20);
  assert.equal(
    loadConfig({ AVATAR_STORE_MAX_PER_TENANT: "0" }).avatarStoreMaxPerTenant,
    0,
  );
  for (const bad of ["-1", "2.5", "many"]) {
    assert.throws(
      () => loadConfig({ AVATAR_STORE_MAX_PER_TENANT: bad }),
      (err) =>
        err instanceof ConfigError &&
        /AVATAR_STORE_MAX_PER_TENANT/.test(err.message),
    );
  }
});
