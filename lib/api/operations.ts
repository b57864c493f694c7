/**
 * The REST operations as the docs describe them (DECISIONS 10): `API_OPERATIONS` is the
 * one description of the six canonical operations and their deprecated aliases (scope,
 * success schema, request schema, the errors each may answer). The OpenAPI document
 * (./openapi.ts) and the `/docs` reference pages render from it.
 */
import type { z } from "zod";
import { apiKeyCreatedSchema, apiKeyCreateSchema } from "./key_schemas.ts";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import type { Scope } from "../principal.ts";
import {
  clientTokenResponseSchema,
  createSessionSchema,
  endSessionResponseSchema,
  sessionResponseSchema,
  sessionStatusResponseSchema,
} from "./schemas.ts";

/** A JSON Schema object, as `z.toJSONSchema` writes it. */
export type JsonSchema = Record<string, unknown>;

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
   * outside its shape (refinements; the create request's pre-parse rules are in its
   * schema's metadata, lib/api/schemas.ts).
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
  "AVTR_REQUEST_TIMEOUT",
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
      "Mints a key for a tenant with the given scopes. The plaintext `api_key` is in this response only, ever; only a hash is stored. The operator (tenant `admin`) mints for any tenant; any other tenant's `keys:admin` key mints for its own tenant only (another tenant → 403 `AVTR_AUTH_FORBIDDEN`).",
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
    errors: [
      "AVTR_REQUEST_INVALID",
      "AVTR_REQUEST_TOO_LARGE",
      "AVTR_REQUEST_TIMEOUT",
    ],
  },
  {
    operationId: "revokeApiKey",
    method: "delete",
    path: "/v1/api-keys/{key_id}",
    summary: "Revoke an API key",
    description:
      "Revokes the key on every instance: a request that starts after this answered is refused. Revoking a revoked key answers 204 again. A tenant administrator revokes its own tenant's keys only: another tenant's key answers 404 `AVTR_API_KEY_NOT_FOUND`, as an unknown key does.",
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
