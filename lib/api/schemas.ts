/**
 * The zod schemas of the session surface: the create request (SPEC 4.1) and every
 * response body (SPEC 2.3–2.7, 7.1). The same schemas validate requests, check
 * responses in tests and feed the OpenAPI document (`z.toJSONSchema`).
 *
 * `parseCreateSession` maps faults to the codes of DECISIONS 3: anything about
 * `provider_type`, `provider_config` or `provider_connection_id` is
 * `AVTR_PROVIDER_MISCONFIGURED`, every other field fault `AVTR_REQUEST_INVALID`, each
 * with `param` set to the field's JSON path.
 */
import { z } from "zod";
import { issueMessage, issuePath } from "./body.ts";
import { ApiError, ERROR_CODES, type ErrorCode } from "../errors.ts";
import { PROVIDER_TYPES, type ProviderType } from "../ports/providers.ts";

export const SESSION_STATUSES = [
  "created",
  "activating",
  "active",
  "ending",
  "ended",
  "ended_with_warnings",
  "failed",
] as const;
export type SessionStatus = typeof SESSION_STATUSES[number];

/**
 * Why a session reached its terminal state (DECISIONS 4), recorded in the same commit
 * as the move.
 */
export const END_REASONS = [
  "requested",
  "forced",
  "connect_timeout",
  "start_failed",
  "idle_timeout",
  "max_duration",
  "provider_ended",
  "provider_failed",
  "render_failed",
  "instance_lost",
] as const;
export type EndReason = typeof END_REASONS[number];

export const TRANSPORTS = ["auto", "webrtc_sfu", "websocket_fmp4"] as const;
export type Transport = typeof TRANSPORTS[number];

/** SPEC 2.1. */
export const SESSION_ID_PATTERN = /^session:[A-Za-z0-9_-]+$/;

/** The path the `vendor_c` conversational-agent socket lives on (SPEC 4.1). */
export const VENDOR_C_CONVERSATION_PATH = "/v1/convai/conversation";

/** Range of `external_engine.user_sample_rate`: telephony 8 kHz to studio 48 kHz. */
export const USER_SAMPLE_RATE_MIN = 8000;
export const USER_SAMPLE_RATE_MAX = 48000;
export const USER_SAMPLE_RATE_DEFAULT = 24000;

const MAX_URL_LENGTH = 2048;
/** RFC 9110 token: what an HTTP header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value the Fetch/WebSocket APIs accept: no CR, LF or NUL. */
const HEADER_VALUE = /^[^\r\n\0]*$/;

function parsedUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** A `wss://` URL, optionally on a fixed path. */
export function wssUrl(path?: string) {
  return z.string().max(MAX_URL_LENGTH).regex(
    /^wss:\/\//,
    "must be a wss:// URL",
  ).refine(
    (v) => {
      const u = parsedUrl(v);
      return u !== null && u.hostname !== "" &&
        (path === undefined || u.pathname === path);
    },
    path ? `must be a valid wss:// URL on path ${path}` : "must be a valid URL",
  );
}

export const vendorARealtimeConfigSchema = z.strictObject({
  client_secret: z.string().min(1),
});

export const vendorBConfigSchema = z.strictObject({
  access_token: z.string().min(1),
  agent_id: z.string().min(1),
});

export const externalEngineConfigSchema = z.strictObject({
  url: wssUrl(),
  auth_headers: z.record(
    z.string().regex(HEADER_NAME, "must be a valid HTTP header name"),
    z.string().regex(HEADER_VALUE, "must not contain CR, LF or NUL"),
  ),
  user_sample_rate: z.int().min(USER_SAMPLE_RATE_MIN).max(
    USER_SAMPLE_RATE_MAX,
  ).default(USER_SAMPLE_RATE_DEFAULT),
});

export const vendorCConfigSchema = z.strictObject({
  agent_id: z.string().min(1),
  api_key: z.string().min(1).optional(),
  signed_url: wssUrl(VENDOR_C_CONVERSATION_PATH).optional(),
});

/** The per-provider shape of each `provider_config` key. */
export const PROVIDER_CONFIG_SCHEMAS = {
  vendor_a_realtime: vendorARealtimeConfigSchema,
  vendor_b: vendorBConfigSchema,
  external_engine: externalEngineConfigSchema,
  vendor_c: vendorCConfigSchema,
} as const satisfies Record<ProviderType, z.ZodType>;

export const avatarConfigSchema = z.strictObject({
  avatar_id: z.string().min(1).max(64).optional(),
  bg_id: z.string().min(1).max(64).optional(),
});

/**
 * What `parseCreateSession` checks before zod runs, in JSON Schema for the OpenAPI
 * document: `provider_config` holds exactly the key named by `provider_type`. Each
 * branch requires its discriminator and defines the key it requires, so the branches
 * are visibly exclusive (what linters such as Redocly's check).
 */
const PROVIDER_BRANCHES = PROVIDER_TYPES.map((t) => ({
  required: ["provider_type", "provider_config"],
  properties: {
    provider_type: { const: t },
    provider_config: {
      // The key's shape is in the main schema's `provider_config.properties`.
      properties: { [t]: true },
      required: [t],
      maxProperties: 1,
    },
  },
}));

/**
 * The create request (SPEC 4.1). `provider_config` lists every provider key for the
 * document's sake; exactly one, the one matching `provider_type`, may be present
 * (`parseCreateSession` enforces it before this schema runs; `oneOf` in the metadata
 * says the same in the generated JSON Schema).
 */
export const createSessionSchema = z.strictObject({
  provider_type: z.enum(PROVIDER_TYPES),
  provider_config: z.strictObject({
    vendor_a_realtime: vendorARealtimeConfigSchema.optional(),
    vendor_b: vendorBConfigSchema.optional(),
    external_engine: externalEngineConfigSchema.optional(),
    vendor_c: vendorCConfigSchema.optional(),
  }).describe(
    "Exactly one key, the one matching provider_type: per-session provider credentials",
  ),
  transport: z.enum(TRANSPORTS).default("auto"),
  avatar_config: avatarConfigSchema.optional(),
  webhook_url: z.string().max(MAX_URL_LENGTH).regex(
    /^https:\/\//,
    "must be an https:// URL",
  ).refine((v) => parsedUrl(v)?.hostname, "must be a valid URL").optional(),
}).meta({ oneOf: PROVIDER_BRANCHES });
export type CreateSessionInput = z.output<typeof createSessionSchema>;

const PROVIDER_FIELDS = new Set([
  "provider_type",
  "provider_config",
  "provider_connection_id",
]);

function fail(code: ErrorCode, message: string, param: string): never {
  throw new ApiError(code, message, { param });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * Validates a create body (already a JSON object). Throws 400 `ApiError`s with `param`;
 * returns the parsed request with defaults applied.
 */
export function parseCreateSession(
  body: Record<string, unknown>,
): CreateSessionInput {
  const MISCONF = "AVTR_PROVIDER_MISCONFIGURED";
  if ("provider_connection_id" in body) {
    fail(
      MISCONF,
      "provider_connection_id is not accepted: send per-session credentials in provider_config",
      "provider_connection_id",
    );
  }
  const type = body.provider_type;
  if (type === undefined) {
    fail(MISCONF, "provider_type is required", "provider_type");
  }
  if (!(PROVIDER_TYPES as readonly unknown[]).includes(type)) {
    fail(
      MISCONF,
      `provider_type must be one of ${PROVIDER_TYPES.join(", ")}`,
      "provider_type",
    );
  }
  const cfg = body.provider_config;
  if (cfg === undefined) {
    fail(MISCONF, "provider_config is required", "provider_config");
  }
  if (!isPlainObject(cfg)) {
    fail(MISCONF, "provider_config must be an object", "provider_config");
  }
  const keys = Object.keys(cfg);
  for (const k of keys) {
    if (!(PROVIDER_TYPES as readonly string[]).includes(k)) {
      fail(
        MISCONF,
        `Unknown field in provider_config: ${k}`,
        `provider_config.${k}`,
      );
    }
  }
  if (keys.length > 1) {
    fail(
      MISCONF,
      "provider_config must have exactly one key, the one matching provider_type",
      "provider_config",
    );
  }
  if (keys.length === 0) {
    fail(
      MISCONF,
      `provider_config.${type} is required`,
      `provider_config.${type}`,
    );
  }
  if (keys[0] !== type) {
    fail(
      MISCONF,
      `provider_config.${keys[0]} does not match provider_type ${type}`,
      `provider_config.${keys[0]}`,
    );
  }
  const result = createSessionSchema.safeParse(body);
  if (result.success) return result.data;
  // Provider faults first: they are the more specific answer.
  const issues = [...result.error.issues].map((issue) => {
    const path = issue.code === "unrecognized_keys"
      ? [...issue.path, issue.keys[0]]
      : issue.path;
    return { issue, path };
  });
  const isProvider = (p: readonly PropertyKey[]) =>
    PROVIDER_FIELDS.has(String(p[0]));
  const first = issues.find((i) => isProvider(i.path)) ?? issues[0];
  const code: ErrorCode = isProvider(first.path)
    ? MISCONF
    : "AVTR_REQUEST_INVALID";
  const param = issuePath(first.path);
  throw new ApiError(
    code,
    issueMessage(first.issue),
    param ? { param } : {},
  );
}

// ---------------------------------------------------------------------------
// Response bodies

const epochMs = z.int().min(0);

export const iceServerSchema = z.object({
  urls: z.union([z.string(), z.array(z.string())]),
  username: z.string().optional(),
  credential: z.string().optional(),
});

export const streamMetadataSchema = z.strictObject({
  session_token: z.string().min(1),
  sfu_endpoint: z.string().nullable(),
  ice_servers: z.array(iceServerSchema),
});
export type StreamMetadata = z.output<typeof streamMetadataSchema>;

export const sessionIdSchema = z.string().min(1).regex(SESSION_ID_PATTERN);

export const sessionResponseSchema = z.strictObject({
  session_id: sessionIdSchema,
  client_token: z.string().min(1),
  expires_at: epochMs,
  status: z.enum(SESSION_STATUSES),
  transport: z.enum(TRANSPORTS),
  stream_metadata: streamMetadataSchema,
});
export type SessionResponse = z.output<typeof sessionResponseSchema>;

export const clientTokenResponseSchema = z.strictObject({
  client_token: z.string().min(1),
  expires_at: epochMs,
  stream_metadata: streamMetadataSchema,
  transport: z.enum(TRANSPORTS),
});
export type ClientTokenResponse = z.output<typeof clientTokenResponseSchema>;

export const sessionStatusResponseSchema = z.strictObject({
  session_id: sessionIdSchema,
  transport: z.enum(TRANSPORTS),
  status: z.enum(SESSION_STATUSES),
  provider_type: z.string(),
  created_at: epochMs.optional(),
  started_at: epochMs.optional(),
  ended_at: epochMs.optional(),
  end_reason: z.enum(END_REASONS).optional().describe(
    "Why the session ended; present once it is terminal (ended, ended_with_warnings, failed).",
  ),
  warning: z.string().optional().describe(
    "What went wrong; present exactly when status is ended_with_warnings.",
  ),
  duration_s: z.number().min(0).optional().describe(
    "Seconds the session was active (not counting ending); present when it ended from active.",
  ),
  chunks_rendered: z.int().min(0).optional().describe(
    "Media segments sent to browsers; present when it ended from active.",
  ),
});
export type SessionStatusResponse = z.output<
  typeof sessionStatusResponseSchema
>;

export const endSessionResponseSchema = z.strictObject({
  session_id: sessionIdSchema,
  status: z.enum(SESSION_STATUSES),
  ended_at: epochMs,
  warning: z.string().optional(),
  chunks_rendered: z.int().min(0).optional(),
  duration_s: z.number().min(0).optional(),
}).refine(
  (b) => (b.status === "ended_with_warnings") === (b.warning !== undefined),
  "warning is present exactly when status is ended_with_warnings",
);
export type EndSessionResponse = z.output<typeof endSessionResponseSchema>;

const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as [
  ErrorCode,
  ...ErrorCode[],
];

/** SPEC 7.1 + DECISIONS 3: `retry_after` present exactly on retryable codes. */
export const errorBodySchema = z.strictObject({
  code: z.enum(ERROR_CODE_NAMES),
  message: z.string().min(1),
  request_id: z.string().min(1),
  doc_url: z.string().regex(/^https:\/\//),
  retry_after: z.int().min(1).max(3600).optional(),
  param: z.string().min(1).optional(),
}).refine(
  (b) => ERROR_CODES[b.code].retryable === (b.retry_after !== undefined),
  "retry_after must be present exactly on retryable codes",
);
export type ErrorBodyShape = z.output<typeof errorBodySchema>;
