/**
 * The OpenAPI 3.1 document of the REST API (DECISIONS 10), generated from the zod schemas
 * that validate requests and check responses (`z.toJSONSchema`), and from the error
 * table. `API_OPERATIONS` is the one description of the six canonical operations and
 * their aliases; the `/docs` reference page renders from it too.
 */
import { z } from "zod";
import { apiKeyCreatedSchema, apiKeyCreateSchema } from "./api_keys.ts";
import { ERROR_CODES, type ErrorCode } from "./errors.ts";
import type { Scope } from "./principal.ts";
import { PROVIDER_TYPES } from "./providers/port.ts";
import {
  clientTokenResponseSchema,
  createSessionSchema,
  endSessionResponseSchema,
  errorBodySchema,
  SESSION_ID_PATTERN,
  sessionResponseSchema,
  sessionStatusResponseSchema,
} from "./schemas.ts";

type JsonSchema = Record<string, unknown>;
export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: Record<string, Record<string, unknown>>;
};

/** Codes any authenticated `/v1/` operation may answer. */
export const COMMON_ERRORS: readonly ErrorCode[] = [
  "AVTR_AUTH_MISSING_CREDENTIALS",
  "AVTR_AUTH_INVALID_KEY",
  "AVTR_AUTH_EXPIRED_TOKEN",
  "AVTR_AUTH_MISSING_SCOPE",
  "AVTR_AUTH_FORBIDDEN",
  "AVTR_AUTH_IDP_ORG_UNMAPPED",
  "AVTR_RATE_LIMIT_EXCEEDED",
  "AVTR_INTERNAL_ERROR",
  "AVTR_SESSION_STATE_UNAVAILABLE",
];

/** One REST operation: what the docs page and the OpenAPI document say about it. */
export interface ApiOperation {
  operationId: string;
  method: "get" | "post" | "delete";
  /** OpenAPI path template, e.g. `/v1/sessions/{session_id}`. */
  path: string;
  summary: string;
  description: string;
  scope: Scope;
  /** Status and response schema of success (`null` schema: no body). */
  success: { status: 200 | 201 | 204; schema: z.ZodType | null; name?: string };
  /**
   * The request body's schema; `rules` adds to the generated JSON Schema what zod checks
   * outside its shape (refinements, the pre-parse rules of `parseCreateSession`).
   */
  request?: {
    schema: z.ZodType;
    name: string;
    rules?: (jsonSchema: JsonSchema) => void;
  };
  /** Codes beyond `COMMON_ERRORS`. */
  errors: readonly ErrorCode[];
  /** Extra query/header parameters. */
  parameters?: readonly Record<string, unknown>[];
  /** For an alias: the operationId of the canonical operation it stands for. */
  aliasOf?: string;
}

const SESSION_ID_PARAM = {
  name: "session_id",
  in: "path",
  required: true,
  schema: { type: "string", minLength: 1, pattern: SESSION_ID_PATTERN.source },
};
const IDEMPOTENCY_KEY_PARAM = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "1 to 255 printable ASCII characters. Per tenant, kept 24 h: the same key with the same body replays the session (200, `Idempotent-Replayed: true`, a fresh `client_token`); with another body it answers 422",
  schema: {
    type: "string",
    minLength: 1,
    maxLength: 255,
    pattern: "^[\\x20-\\x7E]+$",
  },
};
const FORCE_PARAM = {
  name: "force",
  in: "query",
  required: false,
  description:
    "`true` skips the graceful disconnect handshake and drops provider and render resources at once",
  schema: { type: "boolean", default: false },
};

const CREATE_ERRORS: readonly ErrorCode[] = [
  "AVTR_REQUEST_INVALID",
  "AVTR_PROVIDER_MISCONFIGURED",
  "AVTR_RENDER_MISCONFIGURED",
  "AVTR_SFU_NOT_CONFIGURED",
  "AVTR_SESSION_CANCELLED",
  "AVTR_REQUEST_TOO_LARGE",
  "AVTR_IDEMPOTENCY_MISMATCH",
  "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
  "AVTR_RATE_LIMIT_PROVIDER_QUOTA",
  "AVTR_PROVIDER_DOWNSTREAM_FAILED",
  "AVTR_RENDER_FAILED",
  "AVTR_SFU_CONNECTION_FAILED",
  "AVTR_SFU_NEGOTIATION_FAILED",
  "AVTR_PROVIDER_UNAVAILABLE",
  "AVTR_RENDER_CAPACITY",
  "AVTR_SFU_ROOM_FULL",
  "AVTR_PROVIDER_TIMEOUT",
  "AVTR_RENDER_TIMEOUT",
];

const end: Omit<ApiOperation, "operationId" | "method" | "path"> = {
  summary: "End a session",
  description:
    "Ends an `active` session: provider and renderer are told to stop and get up to 10 s to finish, then the session is `ended` (or `ended_with_warnings` with `warning` when cleanup timed out or partly failed). Provider credentials are zeroed. Not idempotent: a second end answers 409 `AVTR_SESSION_ENDED`.",
  scope: "sessions:write",
  success: {
    status: 200,
    schema: endSessionResponseSchema,
    name: "EndSessionResponse",
  },
  errors: [
    "AVTR_REQUEST_INVALID",
    "AVTR_SESSION_NOT_FOUND",
    "AVTR_SESSION_ENDED",
    "AVTR_SESSION_CONFLICT",
  ],
  parameters: [FORCE_PARAM],
};
const status: Omit<ApiOperation, "operationId" | "method" | "path"> = {
  summary: "Read a session's status",
  description:
    "The session's status, transport, provider type and timestamps. Never carries a token. Always safe to retry.",
  scope: "sessions:read",
  success: {
    status: 200,
    schema: sessionStatusResponseSchema,
    name: "SessionStatusResponse",
  },
  errors: ["AVTR_SESSION_NOT_FOUND"],
};
const clientToken: Omit<ApiOperation, "operationId" | "method" | "path"> = {
  summary: "Mint a fresh client token",
  description:
    "A new 5-minute media token for the session, for reconnects and delayed connections. Earlier tokens stay valid until they expire.",
  scope: "sessions:write",
  success: {
    status: 200,
    schema: clientTokenResponseSchema,
    name: "ClientTokenResponse",
  },
  errors: ["AVTR_SESSION_NOT_FOUND"],
};

/**
 * What `parseCreateSession` checks before zod runs: `provider_config` holds exactly the
 * key named by `provider_type`, and `provider_connection_id` is refused.
 */
function createSessionRules(js: JsonSchema): void {
  js.oneOf = PROVIDER_TYPES.map((t) => ({
    properties: {
      provider_type: { const: t },
      provider_config: { required: [t], maxProperties: 1 },
    },
  }));
}

/** What `apiKeyCreateSchema`'s refinement checks: scopes are distinct. */
function apiKeyCreateRules(js: JsonSchema): void {
  const props = js.properties as Record<string, JsonSchema>;
  props.scopes.uniqueItems = true;
}

/** The six canonical operations, then the three deprecated aliases. */
export const API_OPERATIONS: readonly ApiOperation[] = [
  {
    operationId: "createSession",
    method: "post",
    path: "/v1/sessions",
    summary: "Create and start a session",
    description:
      "Validates the request, reserves capacity, does any provider pre-flight and stores the session, all in this one call. Answers `created` with a 5-minute `client_token` for the media socket. Provider credentials in `provider_config` stay in the memory of this instance for the session's lifetime only.",
    scope: "sessions:write",
    success: {
      status: 200,
      schema: sessionResponseSchema,
      name: "SessionResponse",
    },
    request: {
      schema: createSessionSchema,
      name: "CreateSessionRequest",
      rules: createSessionRules,
    },
    errors: CREATE_ERRORS,
    parameters: [IDEMPOTENCY_KEY_PARAM],
  },
  {
    operationId: "getSession",
    method: "get",
    path: "/v1/sessions/{session_id}",
    ...status,
  },
  {
    operationId: "endSession",
    method: "post",
    path: "/v1/sessions/{session_id}/end",
    ...end,
  },
  {
    operationId: "createClientToken",
    method: "post",
    path: "/v1/sessions/{session_id}/client-token",
    ...clientToken,
  },
  {
    operationId: "createApiKey",
    method: "post",
    path: "/v1/api-keys",
    summary: "Create an API key",
    description:
      "Mints a key for a tenant with the given scopes. The plaintext `api_key` is in this response only, ever; only a hash is stored.",
    scope: "keys:admin",
    success: {
      status: 201,
      schema: apiKeyCreatedSchema,
      name: "ApiKeyCreated",
    },
    request: {
      schema: apiKeyCreateSchema,
      name: "ApiKeyCreateRequest",
      rules: apiKeyCreateRules,
    },
    errors: ["AVTR_REQUEST_INVALID", "AVTR_REQUEST_TOO_LARGE"],
  },
  {
    operationId: "revokeApiKey",
    method: "delete",
    path: "/v1/api-keys/{key_id}",
    summary: "Revoke an API key",
    description:
      "Revokes the key on every instance: a request that starts after this answered is refused. Revoking a revoked key answers 204 again.",
    scope: "keys:admin",
    success: { status: 204, schema: null },
    errors: ["AVTR_API_KEY_NOT_FOUND"],
  },
  {
    operationId: "endSessionAlias",
    method: "delete",
    path: "/v1/sessions/{session_id}",
    ...end,
    summary: "End a session (deprecated alias)",
    aliasOf: "endSession",
  },
  {
    operationId: "getSessionStatusAlias",
    method: "get",
    path: "/v1/sessions/{session_id}/status",
    ...status,
    summary: "Read a session's status (deprecated alias)",
    aliasOf: "getSession",
  },
  {
    operationId: "createWsTokenAlias",
    method: "post",
    path: "/v1/sessions/{session_id}/ws-token",
    ...clientToken,
    summary: "Mint a fresh client token (deprecated alias)",
    aliasOf: "createClientToken",
  },
];

/** Every error an operation may answer, common ones included, in table order. */
export function operationErrors(op: ApiOperation): ErrorCode[] {
  const set = new Set<ErrorCode>([...COMMON_ERRORS, ...op.errors]);
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => set.has(c));
}

function toSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const js = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  }) as JsonSchema;
  delete js.$schema;
  return js;
}

const HEADERS: Record<string, JsonSchema> = {
  "X-Request-Id": {
    description:
      "The request's id: the client's `X-Request-Id` when it is 1 to 128 characters of `[A-Za-z0-9_-]`, else a generated UUID. Error bodies echo it as `request_id`",
    schema: { type: "string", pattern: "^[A-Za-z0-9_-]{1,128}$" },
  },
  "X-RateLimit-Limit": {
    description: "Requests allowed per credential in the current 60-s window",
    schema: { type: "integer", minimum: 1 },
  },
  "X-RateLimit-Remaining": {
    description: "Requests left in the current window",
    schema: { type: "integer", minimum: 0 },
  },
  "X-RateLimit-Reset": {
    description: "Unix epoch seconds when the current window ends",
    schema: { type: "integer", minimum: 0 },
  },
  "Retry-After": {
    description:
      "Seconds to wait before retrying; equals the body's `retry_after`",
    schema: { type: "integer", minimum: 1, maximum: 3600 },
  },
  Deprecation: {
    description: "`true`: this path is an alias; use the canonical path",
    schema: { type: "string", const: "true" },
  },
  Link: {
    description: '`<canonical path>; rel="successor-version"`',
    schema: { type: "string" },
  },
};

function headerRefs(names: string[]): Record<string, { $ref: string }> {
  return Object.fromEntries(
    names.map((n) => [n, { $ref: `#/components/headers/${n}` }]),
  );
}

function errorResponses(
  op: ApiOperation,
  docsBaseUrl: string,
  extraHeaders: string[],
): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of operationErrors(op)) {
    const s = ERROR_CODES[code].status;
    byStatus.set(s, [...byStatus.get(s) ?? [], code]);
  }
  const out: Record<string, unknown> = {};
  for (const [s, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const retryable = codes.some((c) => ERROR_CODES[c].retryable);
    const lines = codes.map((c) =>
      `- [\`${c}\`](${docsBaseUrl.replace(/\/+$/, "")}/errors/${c}): ${
        ERROR_CODES[c].title
      }`
    );
    out[String(s)] = {
      description: lines.join("\n"),
      headers: headerRefs([
        ...extraHeaders,
        ...(retryable ? ["Retry-After"] : []),
      ]),
      content: {
        "application/json": {
          schema: {
            allOf: [
              { $ref: "#/components/schemas/ErrorBody" },
              { properties: { code: { enum: codes } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

/** Builds the OpenAPI 3.1 document; `docsBaseUrl` is the base of every `doc_url`. */
export function buildOpenApi(docsBaseUrl: string): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = {
    ErrorBody: toSchema(errorBodySchema, "output"),
  };
  const paths: OpenApiDocument["paths"] = {};
  const base = [
    "X-Request-Id",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
  ];
  for (const op of API_OPERATIONS) {
    const canonical = op.aliasOf
      ? API_OPERATIONS.find((o) => o.operationId === op.aliasOf)
      : undefined;
    const headers = canonical ? [...base, "Deprecation", "Link"] : base;
    const params: unknown[] = [];
    if (op.path.includes("{session_id}")) params.push(SESSION_ID_PARAM);
    if (op.path.includes("{key_id}")) {
      params.push({
        name: "key_id",
        in: "path",
        required: true,
        schema: { type: "string", minLength: 1 },
      });
    }
    params.push(...op.parameters ?? []);
    params.push({
      name: "X-Request-Id",
      in: "header",
      required: false,
      schema: HEADERS["X-Request-Id"].schema,
    });
    const success: Record<string, unknown> = {
      description: op.success.schema
        ? (op.success.name ?? "Success")
        : "Done, no body",
      headers: headerRefs(headers),
    };
    if (op.success.schema && op.success.name) {
      schemas[op.success.name] ??= toSchema(op.success.schema, "output");
      success.content = {
        "application/json": {
          schema: { $ref: `#/components/schemas/${op.success.name}` },
        },
      };
    }
    const operation: Record<string, unknown> = {
      operationId: op.operationId,
      summary: op.summary,
      description: canonical
        ? `${op.description}\n\nDeprecated alias of \`${canonical.method.toUpperCase()} ${canonical.path}\`: behaves exactly like it and adds \`Deprecation: true\` and a \`Link\` to it.`
        : op.description,
      tags: [op.path.startsWith("/v1/api-keys") ? "API keys" : "Sessions"],
      security: [{ bearerAuth: [op.scope] }, { apiKeyHeader: [op.scope] }],
      parameters: params,
      responses: {
        [String(op.success.status)]: success,
        ...errorResponses(op, docsBaseUrl, headers),
      },
    };
    if (op.request) {
      if (!schemas[op.request.name]) {
        const js = toSchema(op.request.schema, "input");
        op.request.rules?.(js);
        schemas[op.request.name] = js;
      }
      operation.requestBody = {
        required: true,
        content: {
          "application/json": {
            schema: { $ref: `#/components/schemas/${op.request.name}` },
          },
        },
      };
    }
    if (canonical) operation.deprecated = true;
    (paths[op.path] ??= {})[op.method] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Live Avatar Session Service",
      version: "1.0.0",
      description:
        "Create live avatar sessions, read their status, end them, and mint media tokens; manage API keys. Every `/v1/` response carries `X-Request-Id` and the `X-RateLimit-*` headers; errors are flat bodies whose `code` is documented under `doc_url`. Unknown paths answer 404 `AVTR_NOT_FOUND`, wrong methods 405 `AVTR_METHOD_NOT_ALLOWED` with `Allow`.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [{ url: "/" }],
    externalDocs: {
      url: "/docs",
      description: "API reference and error codes",
    },
    tags: [{ name: "Sessions" }, { name: "API keys" }],
    security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description:
            "`Authorization: Bearer <api_key>` (or an identity-provider JWT when configured)",
        },
        apiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key" },
      },
      headers: HEADERS,
      schemas,
    },
  };
}

const cache = new Map<string, string>();

/** The document serialised once per docs base, for `/openapi.json`. */
export function openApiJson(docsBaseUrl: string): string {
  let text = cache.get(docsBaseUrl);
  if (text === undefined) {
    text = JSON.stringify(buildOpenApi(docsBaseUrl));
    cache.set(docsBaseUrl, text);
  }
  return text;
}
