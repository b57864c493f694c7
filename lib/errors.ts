/**
 * The one error module of the public API: the table of `AVTR_*` codes (status,
 * retryability, documentation text), the error class that carries a code, and the
 * single mapper from an error to the flat error body of SPEC 7.
 */

export interface CodeInfo {
  status: number;
  retryable: boolean;
  /** Short title, used on the docs page and in OpenAPI. */
  title: string;
  /** What the code means and what a client should do, for the docs page. */
  doc: string;
  /** Default `retry_after` in seconds for retryable codes. */
  retryAfter?: number;
}

export const ERROR_CODES = {
  AVTR_REQUEST_INVALID: {
    status: 400,
    retryable: false,
    title: "Invalid request",
    doc:
      "The request is malformed: the body is not a JSON object, the content type is not JSON, a field breaks its rule or is unknown, or a query parameter or header is invalid. `param` names the field when one field is at fault. Fix the request; retrying it unchanged fails again.",
  },
  AVTR_PROVIDER_MISCONFIGURED: {
    status: 400,
    retryable: false,
    title: "Provider configuration invalid",
    doc:
      "`provider_type` is missing or unknown, or `provider_config` does not match it: missing, not an object, several keys, a key for another provider, or a field inside it that breaks its rule. `provider_connection_id` is refused: managed provider connections are not accepted.",
  },
  AVTR_RENDER_MISCONFIGURED: {
    status: 400,
    retryable: false,
    title: "Render configuration invalid",
    doc:
      "`avatar_config.avatar_id` or `avatar_config.bg_id` names no entry of the avatar catalog, or `avatar_id` no photo avatar of your tenant (another tenant's reads the same as a missing one). Omit them to use the catalog default.",
  },
  AVTR_SFU_NOT_CONFIGURED: {
    status: 400,
    retryable: false,
    title: "SFU not configured",
    doc:
      "`transport: webrtc_sfu` was requested but this deployment has no realtime SFU. Use `auto` or `websocket_fmp4`.",
  },
  AVTR_AUTH_MISSING_CREDENTIALS: {
    status: 401,
    retryable: false,
    title: "Missing credentials",
    doc:
      "No credential was supplied. Send `Authorization: Bearer <api_key>` or `x-api-key: <api_key>`.",
  },
  AVTR_AUTH_INVALID_KEY: {
    status: 401,
    retryable: false,
    title: "Invalid credential",
    doc:
      "The API key is unrecognized or revoked, or the identity-provider token failed verification (signature, issuer). On the media socket: the token is missing, malformed, forged, for another session or for another purpose.",
  },
  AVTR_AUTH_EXPIRED_TOKEN: {
    status: 401,
    retryable: false,
    title: "Expired credential",
    doc:
      "The credential has expired: an API key past its `expires_at`, an identity-provider token past its `exp`, or a media token past its 5-minute lifetime. Mint a fresh one (`POST /v1/sessions/{session_id}/client-token` for media tokens).",
  },
  AVTR_AUTH_MISSING_SCOPE: {
    status: 403,
    retryable: false,
    title: "Missing scope",
    doc:
      "The credential is valid but lacks the scope this route needs: `sessions:write` for create, end and client-token; `sessions:read` for status reads; `keys:admin` for the API-key routes.",
  },
  AVTR_AUTH_FORBIDDEN: {
    status: 403,
    retryable: false,
    title: "Forbidden",
    doc:
      "The credential is recognized but not permitted, for example an identity-provider token whose authorized party (`azp`) is not on the allow-list, or a tenant's `keys:admin` key minting a key for another tenant (a tenant administrator administers its own tenant only).",
  },
  AVTR_AUTH_IDP_ORG_UNMAPPED: {
    status: 403,
    retryable: false,
    title: "Identity-provider organization not mapped",
    doc:
      "The identity-provider token is valid but its organization is not mapped to a tenant of this service. An operator maps organizations to tenants in the admin console.",
  },
  AVTR_SESSION_NOT_FOUND: {
    status: 404,
    retryable: false,
    title: "Session not found",
    doc:
      "No session with this id exists for your tenant. Sessions of other tenants answer the same way.",
  },
  AVTR_API_KEY_NOT_FOUND: {
    status: 404,
    retryable: false,
    title: "API key not found",
    doc:
      "No API key with this `key_id` exists, or it belongs to another tenant than the tenant administrator's (the same answer, so nothing tells the two apart).",
  },
  AVTR_NOT_FOUND: {
    status: 404,
    retryable: false,
    title: "Not found",
    doc:
      "No route matches this path. The contract is the six paths under `/v1/`.",
  },
  AVTR_METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    title: "Method not allowed",
    doc:
      "The path exists but not with this method. The `Allow` header lists the methods it takes.",
  },
  AVTR_SESSION_ENDED: {
    status: 409,
    retryable: false,
    title: "Session already ended",
    doc:
      "The session is `ended` or `ended_with_warnings`. Ending is not idempotent: treat this as done, do not retry.",
  },
  AVTR_SESSION_CONFLICT: {
    status: 409,
    retryable: false,
    title: "Session not endable",
    doc:
      "The session is `created`, `activating`, `ending` or `failed`, from which end is not allowed. Re-read the status; do not blind-retry.",
  },
  AVTR_SESSION_CANCELLED: {
    status: 409,
    retryable: false,
    title: "Session cancelled",
    doc: "The session was cancelled while it was being started.",
  },
  AVTR_REQUEST_TOO_LARGE: {
    status: 413,
    retryable: false,
    title: "Request too large",
    doc: "The request body is larger than 64 KiB.",
  },
  AVTR_REQUEST_TIMEOUT: {
    status: 408,
    retryable: false,
    title: "Request body too slow",
    doc:
      "The request body did not arrive in full within the server's body deadline (`REQUEST_BODY_TIMEOUT_MS`, 10 s by default), counted from when the server started reading it. The connection is closed. Send the whole body promptly; a request that sends it at once never sees this.",
  },
  AVTR_IDEMPOTENCY_MISMATCH: {
    status: 422,
    retryable: false,
    title: "Idempotency key reused",
    doc:
      "This `Idempotency-Key` was already used with a different request body within the last 24 hours. Use a new key for a new request.",
  },
  AVTR_RATE_LIMIT_EXCEEDED: {
    status: 429,
    retryable: true,
    retryAfter: 60,
    title: "Rate limit exceeded",
    doc:
      "Too many requests for this credential in the current window. Wait `retry_after` seconds (also in `Retry-After`), with jitter.",
  },
  AVTR_RATE_LIMIT_CONCURRENT_SESSIONS: {
    status: 429,
    retryable: true,
    retryAfter: 30,
    title: "Concurrent-session limit reached",
    doc:
      "Your tenant has as many live sessions as it may. End one, or wait `retry_after` seconds and try again.",
  },
  AVTR_RATE_LIMIT_PROVIDER_QUOTA: {
    status: 429,
    retryable: true,
    retryAfter: 60,
    title: "Provider quota exhausted",
    doc:
      "The conversation provider's quota is exhausted. Retry after `retry_after` seconds.",
  },
  AVTR_INTERNAL_ERROR: {
    status: 500,
    retryable: true,
    retryAfter: 5,
    title: "Internal error",
    doc:
      "Something unexpected failed on our side. The response says nothing of the cause; quote `request_id` to support. Safe to retry after `retry_after` seconds.",
  },
  AVTR_PROVIDER_DOWNSTREAM_FAILED: {
    status: 502,
    retryable: true,
    retryAfter: 5,
    title: "Provider failed",
    doc:
      "The conversation provider returned an error, or a downstream step of the start failed.",
  },
  AVTR_RENDER_FAILED: {
    status: 502,
    retryable: false,
    title: "Render failed",
    doc: "Rendering failed terminally for this session.",
  },
  AVTR_SFU_CONNECTION_FAILED: {
    status: 502,
    retryable: true,
    retryAfter: 5,
    title: "SFU connection failed",
    doc: "The realtime SFU could not be reached.",
  },
  AVTR_SFU_NEGOTIATION_FAILED: {
    status: 502,
    retryable: true,
    retryAfter: 5,
    title: "SFU negotiation failed",
    doc: "Negotiation with the realtime SFU failed.",
  },
  AVTR_PROVIDER_UNAVAILABLE: {
    status: 503,
    retryable: true,
    retryAfter: 10,
    title: "Provider unavailable",
    doc:
      "The conversation provider is unavailable. Retry after `retry_after` seconds.",
  },
  AVTR_SESSION_STATE_UNAVAILABLE: {
    status: 503,
    retryable: true,
    retryAfter: 5,
    title: "Session state unavailable",
    doc:
      "The session store is temporarily unreachable, or the token secret of this deployment is unusable. Retry after `retry_after` seconds.",
  },
  AVTR_RENDER_CAPACITY: {
    status: 503,
    retryable: true,
    retryAfter: 15,
    title: "Render capacity exhausted",
    doc: "No render slot is free right now. Retry after `retry_after` seconds.",
  },
  AVTR_SFU_ROOM_FULL: {
    status: 503,
    retryable: true,
    retryAfter: 15,
    title: "SFU room full",
    doc: "The realtime SFU room is at capacity.",
  },
  AVTR_PROVIDER_TIMEOUT: {
    status: 504,
    retryable: true,
    retryAfter: 5,
    title: "Provider timeout",
    doc: "A call to the conversation provider timed out during start.",
  },
  AVTR_RENDER_TIMEOUT: {
    status: 504,
    retryable: true,
    retryAfter: 5,
    title: "Render timeout",
    doc: "The renderer did not become ready in time during start.",
  },
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function codeInfo(code: ErrorCode): CodeInfo {
  return ERROR_CODES[code];
}

export interface ApiErrorOptions {
  /** JSON path of the one field at fault; kept on 400s only (DECISIONS 3). */
  param?: string;
  /** Seconds to wait; only kept for retryable codes, clamped to 1..3600. */
  retryAfter?: number;
  /** Extra response headers (e.g. `Allow` on 405). */
  headers?: Record<string, string>;
  /** The underlying cause, for the log only. Never rendered. */
  cause?: unknown;
}

/** An error that maps to one flat `AVTR_*` error body. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly param?: string;
  readonly retryAfter?: number;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    const info = ERROR_CODES[code] as CodeInfo;
    // `param` is for the 400s about one field: no other status carries it.
    if (info.status === 400) this.param = options.param;
    if (info.retryable) {
      this.retryAfter = clampRetryAfter(
        options.retryAfter ?? info.retryAfter ?? 5,
      );
    }
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export function clampRetryAfter(seconds: number): number {
  return Math.min(3600, Math.max(1, Math.ceil(seconds)));
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  request_id: string;
  doc_url: string;
  retry_after?: number;
  param?: string;
}

/** The documentation URL of a code, under the deployment's docs base. */
export function docUrl(docsBaseUrl: string, code: ErrorCode): string {
  return `${docsBaseUrl.replace(/\/+$/, "")}/errors/${code}`;
}

/** Turns any thrown value into an `ApiError`; unknown errors become a generic 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError("AVTR_INTERNAL_ERROR", "An unexpected error occurred", {
    cause: err,
  });
}

/** The one place an error becomes a response: the flat body of SPEC 7.1. */
export function errorResponse(
  err: ApiError,
  requestId: string,
  docsBaseUrl: string,
): Response {
  const body: ErrorBody = {
    code: err.code,
    message: err.message,
    request_id: requestId,
    doc_url: docUrl(docsBaseUrl, err.code),
  };
  const headers = new Headers({
    "content-type": "application/json; charset=utf-8",
    "x-request-id": requestId,
    ...err.headers,
  });
  if (err.retryAfter !== undefined) {
    body.retry_after = err.retryAfter;
    headers.set("retry-after", String(err.retryAfter));
  }
  if (err.param !== undefined) body.param = err.param;
  return new Response(JSON.stringify(body), { status: err.status, headers });
}
