/**
 * Backend client of the live avatar service: typed calls for the six REST paths, for a
 * customer backend on Deno, Node (18+) or Bun. Only web APIs (`fetch`, `crypto`,
 * timers) are used; no server code is imported.
 *
 * Retries (SPEC 6.3, 7): only failures the service marked retryable (`retry_after` in
 * the body, the `AVTR_*` retryable list) and, for calls that are safe to repeat, network
 * failures. Each wait honours `retry_after` plus up to 20% jitter; all waits of one call
 * share a time budget. A 409 is never retried; `endSession` resolves it to an ended
 * result. `createSession` sends one `Idempotency-Key` on every attempt.
 */
import {
  AvatarApiError,
  errorFromResponse,
  isRetryableCode,
} from "./errors.ts";

export {
  AvatarApiError,
  type AvatarErrorCode,
  type ClientErrorCode,
  isRetryableCode,
} from "./errors.ts";

export type * from "./api_types.ts";
export {
  externalEngineSession,
  type SessionOptions,
  vendorARealtimeSession,
  vendorBSession,
  vendorCSession,
} from "./providers.ts";
import type {
  ApiKeyCreated,
  ClientTokenResponse,
  CreateApiKeyRequest,
  CreateSessionRequest,
  EndSessionResponse,
  SessionResponse,
  SessionStatusResponse,
} from "./api_types.ts";

export interface AvatarClientOptions {
  /** The service's base address, e.g. `https://avatar.example.com`. */
  baseUrl: string;
  apiKey: string;
  /** How the key is sent: `Authorization: Bearer` (default) or `x-api-key`. */
  authHeader?: "bearer" | "x-api-key";
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Retries after the first attempt (default 3). 0 disables retries. */
  maxRetries?: number;
  /** Total time one call may spend waiting between attempts (default 30 000 ms). */
  retryBudgetMs?: number;
  /** Per-attempt timeout (default 30 000 ms; creation may take the start timeout). */
  timeoutMs?: number;
  /** Random source for jitter, [0, 1) (default `Math.random`). */
  random?: () => number;
  /** Waits between attempts (default `setTimeout`); tests inject their own. */
  sleep?: (ms: number) => Promise<void>;
}

export interface RequestOptions {
  /** Sent as `X-Request-Id` on every attempt (1..128 of `[A-Za-z0-9_-]`). */
  requestId?: string;
  signal?: AbortSignal;
}

export interface CreateSessionOptions extends RequestOptions {
  /** Dedupes retried creations (1..255 printable ASCII); default a random UUID. */
  idempotencyKey?: string;
}

/** When a call may be repeated after a failure that produced no service answer. */
type RetryPolicy = "network" | "service-only";

interface Call {
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  policy: RetryPolicy;
  options: RequestOptions;
}

const defaultSleep = (ms: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Typed client of the six REST paths (SPEC 4). */
export class AvatarClient {
  readonly #baseUrl: string;
  readonly #authHeaders: Record<string, string>;
  readonly #fetch: typeof fetch;
  readonly #maxRetries: number;
  readonly #budgetMs: number;
  readonly #timeoutMs: number;
  readonly #random: () => number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: AvatarClientOptions) {
    if (!options.baseUrl) throw new TypeError("baseUrl is required");
    if (!options.apiKey) throw new TypeError("apiKey is required");
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#authHeaders = options.authHeader === "x-api-key"
      ? { "x-api-key": options.apiKey }
      : { authorization: `Bearer ${options.apiKey}` };
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#maxRetries = Math.max(0, options.maxRetries ?? 3);
    this.#budgetMs = Math.max(0, options.retryBudgetMs ?? 30_000);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#random = options.random ?? Math.random;
    this.#sleep = options.sleep ?? defaultSleep;
  }

  /**
   * `POST /v1/sessions`: creates and starts a session. The same `Idempotency-Key` goes
   * with every attempt, so a retried create never makes a second session.
   */
  createSession(
    body: CreateSessionRequest,
    options: CreateSessionOptions = {},
  ): Promise<SessionResponse> {
    const key = options.idempotencyKey ?? crypto.randomUUID();
    return this.#call<SessionResponse>({
      method: "POST",
      path: "/v1/sessions",
      body,
      headers: { "idempotency-key": key },
      policy: "network",
      options,
    });
  }

  /** `GET /v1/sessions/{id}`: always safe to retry (SPEC 7.4). */
  getSession(
    sessionId: string,
    options: RequestOptions = {},
  ): Promise<SessionStatusResponse> {
    return this.#call({
      method: "GET",
      path: sessionPath(sessionId),
      policy: "network",
      options,
    });
  }

  /**
   * `POST /v1/sessions/{id}/end`. A 409 (`AVTR_SESSION_ENDED` or
   * `AVTR_SESSION_CONFLICT`) resolves to `{session_id, status: "ended", ended_at: 0}`:
   * the session is gone or not endable, and cleanup treats that as done (SPEC 6.3).
   */
  async endSession(
    sessionId: string,
    options: RequestOptions & { force?: boolean } = {},
  ): Promise<EndSessionResponse> {
    const query = options.force ? "?force=true" : "";
    try {
      return await this.#call<EndSessionResponse>({
        method: "POST",
        path: `${sessionPath(sessionId)}/end${query}`,
        policy: "network",
        options,
      });
    } catch (err) {
      if (err instanceof AvatarApiError && err.status === 409) {
        return { session_id: sessionId, status: "ended", ended_at: 0 };
      }
      throw err;
    }
  }

  /** `POST /v1/sessions/{id}/client-token`: a fresh 5-minute media token. */
  createClientToken(
    sessionId: string,
    options: RequestOptions = {},
  ): Promise<ClientTokenResponse> {
    return this.#call({
      method: "POST",
      path: `${sessionPath(sessionId)}/client-token`,
      policy: "network",
      options,
    });
  }

  /**
   * `POST /v1/api-keys` (needs `keys:admin`). Not repeated after a network failure: the
   * first attempt may have made a key whose plaintext would then be lost.
   */
  createApiKey(
    body: CreateApiKeyRequest,
    options: RequestOptions = {},
  ): Promise<ApiKeyCreated> {
    return this.#call({
      method: "POST",
      path: "/v1/api-keys",
      body,
      policy: "service-only",
      options,
    });
  }

  /** `DELETE /v1/api-keys/{key_id}` (needs `keys:admin`); revoking twice is fine. */
  async revokeApiKey(
    keyId: string,
    options: RequestOptions = {},
  ): Promise<void> {
    await this.#call<null>({
      method: "DELETE",
      path: `/v1/api-keys/${encodeURIComponent(keyId)}`,
      policy: "network",
      options,
    });
  }

  async #call<T>(call: Call): Promise<T> {
    let waited = 0;
    for (let attempt = 0;; attempt++) {
      let error: AvatarApiError;
      try {
        return await this.#attempt<T>(call);
      } catch (err) {
        if (!(err instanceof AvatarApiError)) throw err;
        error = err;
      }
      const delay = this.#retryDelay(call, error, attempt);
      if (delay === null || waited + delay > this.#budgetMs) throw error;
      waited += delay;
      await this.#sleep(delay);
      if (call.options.signal?.aborted) throw error;
    }
  }

  /** Milliseconds to wait before the next attempt, or null when it must not happen. */
  #retryDelay(call: Call, err: AvatarApiError, attempt: number): number | null {
    if (attempt >= this.#maxRetries || err.status === 409) return null;
    if (call.options.signal?.aborted) return null;
    const jitter = 1 + 0.2 * this.#random();
    const fromService = err.code !== "invalid_response" &&
      err.code !== "network_error";
    if (
      err.retry_after !== undefined &&
      (fromService || call.policy === "network")
    ) {
      return Math.round(err.retry_after * 1000 * jitter);
    }
    const backoff = Math.round(Math.min(8000, 500 * 2 ** attempt) * jitter);
    if (isRetryableCode(err.code)) return backoff;
    const transient = err.code === "network_error" ||
      (err.code === "invalid_response" && err.status >= 502 &&
        err.status <= 504);
    return transient && call.policy === "network" ? backoff : null;
  }

  async #attempt<T>(call: Call): Promise<T> {
    const headers: Record<string, string> = {
      ...this.#authHeaders,
      accept: "application/json",
      ...call.headers,
    };
    if (call.options.requestId) {
      headers["x-request-id"] = call.options.requestId;
    }
    let body: string | undefined;
    if (call.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.body);
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(call.options.signal?.reason);
    call.options.signal?.addEventListener("abort", onAbort);
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    let res: Response;
    try {
      res = await this.#fetch(this.#baseUrl + call.path, {
        method: call.method,
        headers,
        body,
        signal: controller.signal,
      });
      if (res.status === 204) return null as T;
      if (!res.ok) throw await errorFromResponse(res);
      try {
        return await res.json() as T;
      } catch (cause) {
        throw new AvatarApiError({
          code: "invalid_response",
          status: res.status,
          message: "The response body is not JSON",
          request_id: res.headers.get("x-request-id") ?? undefined,
          cause,
        });
      }
    } catch (err) {
      if (err instanceof AvatarApiError) throw err;
      throw new AvatarApiError({
        code: "network_error",
        status: 0,
        message: `Request failed before a response: ${
          err instanceof Error ? err.message : String(err)
        }`,
        cause: err,
      });
    } finally {
      clearTimeout(timer);
      call.options.signal?.removeEventListener("abort", onAbort);
    }
  }
}

function sessionPath(sessionId: string): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}`;
}
