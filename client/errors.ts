/**
 * The typed error of the customer client libraries: one class for every failed call,
 * carrying the service's flat error body (SPEC 7.1) or, for failures that never got
 * such a body, a client-side code (`network_error`, `invalid_response`).
 *
 * Standalone: no server code is imported, so the module runs in Deno, Node, Bun and
 * browsers. tests/client/server_test.ts checks the code lists against the service's
 * error table.
 */

/** Codes whose error bodies carry `retry_after` (SPEC 7.2, DECISIONS 3). */
export const RETRYABLE_CODES = [
  "AVTR_INTERNAL_ERROR",
  "AVTR_PROVIDER_DOWNSTREAM_FAILED",
  "AVTR_PROVIDER_TIMEOUT",
  "AVTR_PROVIDER_UNAVAILABLE",
  "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
  "AVTR_RATE_LIMIT_EXCEEDED",
  "AVTR_RATE_LIMIT_PROVIDER_QUOTA",
  "AVTR_RENDER_CAPACITY",
  "AVTR_RENDER_TIMEOUT",
  "AVTR_SESSION_STATE_UNAVAILABLE",
  "AVTR_SFU_CONNECTION_FAILED",
  "AVTR_SFU_NEGOTIATION_FAILED",
  "AVTR_SFU_ROOM_FULL",
] as const;

/** Codes that must not be retried unchanged (SPEC 7.3, DECISIONS 3). */
export const NON_RETRYABLE_CODES = [
  "AVTR_API_KEY_NOT_FOUND",
  "AVTR_AUTH_EXPIRED_TOKEN",
  "AVTR_AUTH_FORBIDDEN",
  "AVTR_AUTH_IDP_ORG_UNMAPPED",
  "AVTR_AUTH_INVALID_KEY",
  "AVTR_AUTH_MISSING_CREDENTIALS",
  "AVTR_AUTH_MISSING_SCOPE",
  "AVTR_IDEMPOTENCY_MISMATCH",
  "AVTR_METHOD_NOT_ALLOWED",
  "AVTR_NOT_FOUND",
  "AVTR_PROVIDER_MISCONFIGURED",
  "AVTR_RENDER_FAILED",
  "AVTR_RENDER_MISCONFIGURED",
  "AVTR_REQUEST_INVALID",
  "AVTR_REQUEST_TIMEOUT",
  "AVTR_REQUEST_TOO_LARGE",
  "AVTR_SESSION_CANCELLED",
  "AVTR_SESSION_CONFLICT",
  "AVTR_SESSION_ENDED",
  "AVTR_SESSION_NOT_FOUND",
  "AVTR_SFU_NOT_CONFIGURED",
] as const;

/** Every `AVTR_*` code the service answers with. */
export type AvatarErrorCode =
  | typeof RETRYABLE_CODES[number]
  | typeof NON_RETRYABLE_CODES[number];

/**
 * Codes made by the client, never by the service: `network_error` (no response: the
 * connection failed or timed out), `invalid_response` (a response that is not the
 * service's JSON, e.g. a proxy's HTML error page).
 */
export type ClientErrorCode = "network_error" | "invalid_response";

/** The flat error body of SPEC 7.1 (plus `param` on 400s, DECISIONS 3). */
export interface ErrorBody {
  code: AvatarErrorCode;
  message: string;
  request_id: string;
  doc_url: string;
  retry_after?: number;
  param?: string;
}

const RETRYABLE = new Set<string>(RETRYABLE_CODES);

/** True for a code whose call may be retried after `retry_after` seconds. */
export function isRetryableCode(code: string): boolean {
  return RETRYABLE.has(code);
}

/** A failed call: the service's error body, or a client-side failure (status 0). */
export class AvatarApiError extends Error {
  /** `AVTR_*` from the body; a `ClientErrorCode` when there was none. */
  readonly code: AvatarErrorCode | ClientErrorCode;
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** The body's `request_id`, else the `X-Request-Id` response header, if any. */
  readonly request_id?: string;
  /** Seconds to wait before retrying (retryable codes only). */
  readonly retry_after?: number;
  /** JSON path of the one field at fault (400s). */
  readonly param?: string;
  readonly doc_url?: string;

  constructor(init: {
    code: AvatarErrorCode | ClientErrorCode;
    status: number;
    message: string;
    request_id?: string;
    retry_after?: number;
    param?: string;
    doc_url?: string;
    cause?: unknown;
  }) {
    super(init.message, { cause: init.cause });
    this.name = "AvatarApiError";
    this.code = init.code;
    this.status = init.status;
    this.request_id = init.request_id;
    this.retry_after = init.retry_after;
    this.param = init.param;
    this.doc_url = init.doc_url;
  }

  /** True when the service marked this failure retryable (it sent `retry_after`). */
  get retryable(): boolean {
    return this.retry_after !== undefined || isRetryableCode(this.code);
  }
}

function isErrorBody(v: unknown): v is ErrorBody {
  if (v === null || typeof v !== "object") return false;
  const b = v as Record<string, unknown>;
  return typeof b.code === "string" && b.code.startsWith("AVTR_") &&
    typeof b.message === "string";
}

/**
 * Builds the error for a non-2xx response: from the flat body when the service sent
 * one, else `invalid_response` (with the `Retry-After` header kept, if any).
 */
export async function errorFromResponse(
  res: Response,
): Promise<AvatarApiError> {
  const headerId = res.headers.get("x-request-id") ?? undefined;
  const text = await res.text().catch(() => "");
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: handled below.
  }
  if (isErrorBody(body)) {
    return new AvatarApiError({
      code: body.code,
      status: res.status,
      message: body.message,
      request_id: body.request_id ?? headerId,
      retry_after: typeof body.retry_after === "number"
        ? body.retry_after
        : undefined,
      param: body.param,
      doc_url: body.doc_url,
    });
  }
  const header = Number(res.headers.get("retry-after"));
  return new AvatarApiError({
    code: "invalid_response",
    status: res.status,
    message: `Unexpected HTTP ${res.status} response without an error body`,
    request_id: headerId,
    retry_after: Number.isInteger(header) && header > 0 ? header : undefined,
  });
}

/** The message of anything thrown: an `Error`'s message, else its string form. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
