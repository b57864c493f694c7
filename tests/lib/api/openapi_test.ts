import assert from "node:assert/strict";
import { ERROR_CODES } from "../../../lib/errors.ts";
import { API_OPERATIONS } from "../../../lib/api/operations.ts";
import { buildOpenApi } from "../../../lib/api/openapi.ts";
import { parseCreateSession } from "../../../lib/api/schemas.ts";
import { testApp } from "../../_helpers.ts";
import { createConfig, lintFromString } from "@redocly/openapi-core";

type Schema = Record<string, unknown>;

/** The JSON Schema keywords the validator below understands; others fail the test. */
const KNOWN = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "enum",
  "const",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "propertyNames",
  "oneOf",
  "anyOf",
  "allOf",
  "maxProperties",
  "items",
  "minItems",
  "uniqueItems",
  "default",
  "description",
]);

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** A small JSON Schema 2020-12 validator for the keywords in `KNOWN`. */
function valid(s: Schema | boolean, v: unknown): boolean {
  if (typeof s === "boolean") return s;
  for (const k of Object.keys(s)) assert.ok(KNOWN.has(k), `keyword ${k}`);
  if (s.type !== undefined) {
    const t = typeOf(v);
    const types = ([] as unknown[]).concat(s.type);
    if (!types.includes(t) && !(t === "integer" && types.includes("number"))) {
      return false;
    }
  }
  if (s.enum && !(s.enum as unknown[]).includes(v)) return false;
  if ("const" in s && s.const !== v) return false;
  if (typeof v === "string") {
    if (s.minLength !== undefined && v.length < (s.minLength as number)) {
      return false;
    }
    if (s.maxLength !== undefined && v.length > (s.maxLength as number)) {
      return false;
    }
    if (s.pattern && !new RegExp(s.pattern as string, "u").test(v)) {
      return false;
    }
  }
  if (typeof v === "number") {
    if (s.minimum !== undefined && v < (s.minimum as number)) return false;
    if (s.maximum !== undefined && v > (s.maximum as number)) return false;
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < (s.minItems as number)) {
      return false;
    }
    if (
      s.uniqueItems &&
      new Set(v.map((x) => JSON.stringify(x))).size !== v.length
    ) {
      return false;
    }
    if (s.items && !v.every((x) => valid(s.items as Schema, x))) return false;
  }
  if (typeOf(v) === "object") {
    const o = v as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, Schema>;
    for (const r of (s.required ?? []) as string[]) if (!(r in o)) return false;
    if (
      s.maxProperties !== undefined &&
      Object.keys(o).length > (s.maxProperties as number)
    ) return false;
    for (const [k, x] of Object.entries(o)) {
      if (s.propertyNames && !valid(s.propertyNames as Schema, k)) return false;
      if (props[k]) {
        if (!valid(props[k], x)) return false;
      } else if (s.additionalProperties === false) {
        return false;
      } else if (
        typeof s.additionalProperties === "object" &&
        !valid(s.additionalProperties as Schema, x)
      ) return false;
    }
  }
  if (s.allOf && !(s.allOf as Schema[]).every((x) => valid(x, v))) return false;
  if (s.anyOf && !(s.anyOf as Schema[]).some((x) => valid(x, v))) return false;
  if (
    s.oneOf && (s.oneOf as Schema[]).filter((x) => valid(x, v)).length !== 1
  ) return false;
  return true;
}

function liveAccepts(body: Record<string, unknown>): boolean {
  try {
    parseCreateSession(body);
    return true;
  } catch {
    return false;
  }
}

const engine = {
  url: "wss://engine.example.com/v1",
  auth_headers: { authorization: "Bearer x" },
};

const CREATE_SAMPLES: [string, Record<string, unknown>][] = [
  ["minimal external_engine", {
    provider_type: "external_engine",
    provider_config: { external_engine: engine },
  }],
  ["every optional field", {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { ...engine, user_sample_rate: 16000 },
    },
    transport: "websocket_fmp4",
    avatar_config: { avatar_id: "a", bg_id: "b" },
    webhook_url: "https://hooks.example.com/x",
  }],
  ["vendor_b", {
    provider_type: "vendor_b",
    provider_config: { vendor_b: { access_token: "t", agent_id: "a" } },
  }],
  ["missing provider_type", { provider_config: { external_engine: engine } }],
  ["unknown provider_type", {
    provider_type: "vendor_z",
    provider_config: { external_engine: engine },
  }],
  ["config for another provider", {
    provider_type: "vendor_b",
    provider_config: { external_engine: engine },
  }],
  ["several provider_config keys", {
    provider_type: "external_engine",
    provider_config: {
      external_engine: engine,
      vendor_b: { access_token: "t", agent_id: "a" },
    },
  }],
  ["empty provider_config", {
    provider_type: "external_engine",
    provider_config: {},
  }],
  ["provider_connection_id", {
    provider_type: "external_engine",
    provider_config: { external_engine: engine },
    provider_connection_id: "pc_1",
  }],
  ["http engine url", {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { ...engine, url: "https://e.example.com" },
    },
  }],
  ["unknown field inside provider_config", {
    provider_type: "external_engine",
    provider_config: { external_engine: { ...engine, extra: 1 } },
  }],
  ["user_sample_rate not an integer", {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { ...engine, user_sample_rate: 16000.5 },
    },
  }],
  ["unknown transport", {
    provider_type: "external_engine",
    provider_config: { external_engine: engine },
    transport: "carrier_pigeon",
  }],
  ["http webhook_url", {
    provider_type: "external_engine",
    provider_config: { external_engine: engine },
    webhook_url: "http://hooks.example.com/x",
  }],
  ["unknown top-level field", {
    provider_type: "external_engine",
    provider_config: { external_engine: engine },
    color: "blue",
  }],
  ["empty avatar_id", {
    provider_type: "external_engine",
    provider_config: { external_engine: engine },
    avatar_config: { avatar_id: "" },
  }],
];

Deno.test("buildOpenApi() is an OpenAPI 3.1 document with the six canonical paths and three deprecated aliases", () => {
  const doc = buildOpenApi("https://docs.example.com");
  assert.equal(doc.openapi, "3.1.0");
  const info = doc.info as Record<string, unknown>;
  assert.equal(typeof info.title, "string");
  assert.equal(typeof info.version, "string");
  const canonical: [string, string][] = [
    ["post", "/v1/sessions"],
    ["get", "/v1/sessions/{session_id}"],
    ["post", "/v1/sessions/{session_id}/end"],
    ["post", "/v1/sessions/{session_id}/client-token"],
    ["post", "/v1/api-keys"],
    ["delete", "/v1/api-keys/{key_id}"],
  ];
  for (const [method, path] of canonical) {
    const op = doc.paths[path]?.[method];
    assert.ok(op, `${method} ${path}`);
    assert.equal(op.deprecated, undefined);
  }
  const aliases: [string, string][] = [
    ["delete", "/v1/sessions/{session_id}"],
    ["get", "/v1/sessions/{session_id}/status"],
    ["post", "/v1/sessions/{session_id}/ws-token"],
  ];
  for (const [method, path] of aliases) {
    assert.equal(doc.paths[path]?.[method]?.deprecated, true, path);
  }
  const ops = Object.values(doc.paths).flatMap((p) => Object.keys(p));
  assert.equal(ops.length, 9);
  const ids = Object.values(doc.paths).flatMap((p) =>
    Object.values(p).map((o) => o.operationId)
  );
  assert.equal(new Set(ids).size, ids.length);
});

Deno.test("buildOpenApi() declares bearer and x-api-key security, and every $ref resolves", () => {
  const doc = buildOpenApi("https://docs.example.com");
  const schemes = doc.components.securitySchemes as Record<string, Schema>;
  assert.deepEqual(schemes.bearerAuth, {
    type: "http",
    scheme: "bearer",
    description: schemes.bearerAuth.description,
  });
  assert.equal(schemes.apiKeyHeader.type, "apiKey");
  assert.equal(schemes.apiKeyHeader.in, "header");
  assert.equal(schemes.apiKeyHeader.name, "x-api-key");
  const text = JSON.stringify(doc);
  for (const [, ref] of text.matchAll(/"\$ref":"#\/([^"]+)"/g)) {
    let node: unknown = doc;
    for (const part of ref.split("/")) {
      node = (node as Record<string, unknown>)[part];
    }
    assert.ok(node, ref);
  }
  // Path templates and path parameters agree.
  for (const [path, item] of Object.entries(doc.paths)) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    for (const op of Object.values(item)) {
      const inPath = (op.parameters as Schema[]).filter((p) => p.in === "path")
        .map((p) => p.name);
      assert.deepEqual(inPath, names, path);
    }
  }
});

Deno.test("buildOpenApi() lists each route's error codes with their status, doc link and headers", () => {
  const doc = buildOpenApi("https://docs.example.com");
  const schemas = doc.components.schemas as Record<string, Schema>;
  const errorProps = schemas.ErrorBody.properties as Record<string, Schema>;
  assert.deepEqual(errorProps.code.enum, Object.keys(ERROR_CODES));
  for (const api of API_OPERATIONS) {
    const op = doc.paths[api.path][api.method];
    const responses = op.responses as Record<string, Schema>;
    const success = responses[String(api.success.status)];
    const successHeaders = Object.keys(success.headers as Schema);
    for (
      const h of [
        "X-Request-Id",
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
      ]
    ) assert.ok(successHeaders.includes(h), `${api.operationId} ${h}`);
    if (api.aliasOf) {
      assert.ok(successHeaders.includes("Deprecation"));
      assert.ok(successHeaders.includes("Link"));
    }
    for (
      const code of [
        "AVTR_AUTH_MISSING_CREDENTIALS",
        "AVTR_RATE_LIMIT_EXCEEDED",
        ...api.errors,
      ]
    ) {
      const info = ERROR_CODES[code as keyof typeof ERROR_CODES];
      const r = responses[String(info.status)];
      assert.ok(r, `${api.operationId} ${code}`);
      const schema = (r.content as Record<string, Record<string, Schema>>)[
        "application/json"
      ].schema;
      const narrowed = (schema.allOf as Schema[])[1].properties as Record<
        string,
        Schema
      >;
      assert.ok((narrowed.code.enum as string[]).includes(code));
      assert.ok(
        (r.description as string).includes(
          `https://docs.example.com/errors/${code}`,
        ),
      );
      const retryable = (narrowed.code.enum as string[]).some((c) =>
        ERROR_CODES[c as keyof typeof ERROR_CODES].retryable
      );
      assert.equal(
        Object.keys(r.headers as Schema).includes("Retry-After"),
        retryable,
      );
    }
  }
  const create = doc.paths["/v1/sessions"].post;
  const r429 = (create.responses as Record<string, Schema>)["429"];
  assert.ok(Object.keys(r429.headers as Schema).includes("Retry-After"));
});

Deno.test("the create request schema accepts and rejects like parseCreateSession", async (t) => {
  const doc = buildOpenApi("https://docs.example.com");
  const schema = (doc.components.schemas as Record<string, Schema>)
    .CreateSessionRequest;
  for (const [name, body] of CREATE_SAMPLES) {
    await t.step(name, () => {
      assert.equal(valid(schema, body), liveAccepts(body));
    });
  }
  await t.step("the samples include both answers", () => {
    const answers = new Set(CREATE_SAMPLES.map(([, b]) => liveAccepts(b)));
    assert.deepEqual([...answers].sort(), [false, true]);
  });
});

Deno.test("GET /openapi.json serves the document as JSON", async () => {
  const app = await testApp({ DOCS_BASE_URL: "https://api.example.com/docs" });
  try {
    const res = await app.request("/openapi.json");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^application\/json/);
    assert.equal(res.headers.get("x-ratelimit-limit"), null);
    const doc = await res.json();
    assert.equal(doc.openapi, "3.1.0");
    assert.ok(
      JSON.stringify(doc).includes(
        "https://api.example.com/docs/errors/AVTR_SESSION_NOT_FOUND",
      ),
    );
  } finally {
    await app.close();
  }
});

Deno.test("the document lints clean with Redocly's recommended rules", async () => {
  const config = await createConfig({ extends: ["recommended"] });
  const problems = await lintFromString({
    source: JSON.stringify(buildOpenApi("https://docs.example.com")),
    absoluteRef: "openapi.json",
    config,
  });
  assert.deepEqual(
    problems.map((p) =>
      `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`
    ),
    [],
  );
});
