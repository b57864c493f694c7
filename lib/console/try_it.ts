/**
 * The console's "Try it" page, its lib side: reading the start form into the body of
 * `POST /v1/sessions` (which `createSession` then validates exactly as the API does),
 * placing the API's error next to the form field it names, and remembering which
 * sessions a console session started there — only those get media tokens through the
 * console (`routes/admin/try/token.ts`).
 */
import { DEFAULT_AVATAR_ID, DEFAULT_BG_ID } from "../avatars.ts";
import type { AppDeps } from "../deps.ts";
import type { ApiError } from "../errors.ts";
import { administers, type Administrator, isOperator } from "../principal.ts";
import { kvTry } from "../kv/store.ts";
import { CONSOLE_SESSION_TTL_MS, consoleSessionKey } from "./session.ts";
import { type Transport, TRANSPORTS } from "../api/schemas.ts";

/** Tenant ids as the API accepts them. */
export const TRY_TENANT_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** The tenant the form proposes. */
export const TRY_DEFAULT_TENANT = "demo";

/** What the operator typed into the start form (the header value is never echoed). */
export interface TryInput {
  tenant: string;
  engine_url: string;
  header_name: string;
  avatar_id: string;
  bg_id: string;
  /** `auto`, `webrtc_sfu` (WebRTC through the SFU) or `websocket_fmp4` (MSE). */
  transport: Transport;
}

/** Form fields an error can be shown next to; `form` is the form as a whole. */
export type TryField =
  | "tenant"
  | "engine_url"
  | "header_name"
  | "header_value"
  | "avatar_id"
  | "bg_id"
  | "transport"
  | "form";

/**
 * The start form's defaults: tenant `demo` for the operator, a tenant administrator's
 * own tenant; the engine from `TRY_ENGINE_URL`.
 */
export function defaultTryInput(deps: AppDeps, by: Administrator): TryInput {
  return {
    tenant: isOperator(by) ? TRY_DEFAULT_TENANT : by.tenantId,
    engine_url: deps.config.tryEngineUrl ?? "",
    header_name: "",
    avatar_id: DEFAULT_AVATAR_ID,
    bg_id: DEFAULT_BG_ID,
    transport: "auto",
  };
}

/**
 * Reads the start form sent by `by`. Returns the echoed input, the create body for the
 * API (or null when the form itself is incomplete) and the form's own field errors; a
 * tenant administrator starts sessions for its own tenant only.
 */
export function readTryForm(form: URLSearchParams, by: Administrator): {
  input: TryInput;
  headerValue: string;
  body: Record<string, unknown> | null;
  errors: Partial<Record<TryField, string>>;
  /** The tenant is one `by` does not administer. */
  forbidden: boolean;
} {
  const input: TryInput = {
    tenant: (form.get("tenant") ?? "").trim(),
    engine_url: (form.get("engine_url") ?? "").trim(),
    header_name: (form.get("header_name") ?? "").trim(),
    avatar_id: form.get("avatar_id") ?? DEFAULT_AVATAR_ID,
    bg_id: form.get("bg_id") ?? DEFAULT_BG_ID,
    transport: "auto",
  };
  const transport = form.get("transport") ?? "auto";
  const known = TRANSPORTS.find((t) => t === transport);
  const headerValue = form.get("header_value") ?? "";
  const errors: Partial<Record<TryField, string>> = {};
  let forbidden = false;
  if (!TRY_TENANT_PATTERN.test(input.tenant)) {
    errors.tenant =
      "Tenant ids are 1 to 64 characters of A-Z, a-z, 0-9, _ or -.";
  } else if (!administers(by, input.tenant)) {
    forbidden = true;
    errors.tenant =
      "You administer your own tenant only: start sessions for it.";
  }
  if (!input.engine_url) {
    errors.engine_url =
      "Enter the wss:// URL of a conversation engine (for example the one `deno task demo` starts).";
  }
  if (known) input.transport = known;
  else errors.transport = "Pick auto, webrtc_sfu or websocket_fmp4.";
  if (!input.header_name && headerValue) {
    errors.header_name = "Name the header this value is sent in.";
  }
  if (Object.keys(errors).length > 0) {
    return { input, headerValue, body: null, errors, forbidden };
  }
  const authHeaders: Record<string, string> = {};
  if (input.header_name) authHeaders[input.header_name] = headerValue;
  return {
    input,
    headerValue,
    body: {
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: input.engine_url, auth_headers: authHeaders },
      },
      transport: input.transport,
      // No background chosen: a photo avatar keeps its own, a drawn one the default.
      avatar_config: input.bg_id
        ? { avatar_id: input.avatar_id, bg_id: input.bg_id }
        : { avatar_id: input.avatar_id },
    },
    errors,
    forbidden,
  };
}

const PARAM_FIELDS: [string, TryField][] = [
  ["provider_config.external_engine.auth_headers", "header_name"],
  ["provider_config.external_engine.url", "engine_url"],
  ["avatar_config.avatar_id", "avatar_id"],
  ["avatar_config.bg_id", "bg_id"],
  ["transport", "transport"],
];

/**
 * The form field an API error belongs next to (by its `param`), and the text shown
 * there: the API's own message, with the param it names. Errors without a param (the
 * engine refused or timed out, no capacity, over the tenant's limit) go to the engine
 * field when they come from the provider pre-flight, else to the form.
 */
export function placeApiError(
  err: ApiError,
): { field: TryField; message: string } {
  const message = `${err.message} (${err.code}${
    err.param ? `, param ${err.param}` : ""
  })`;
  const param = err.param ?? "";
  for (const [prefix, field] of PARAM_FIELDS) {
    if (param === prefix || param.startsWith(prefix + ".")) {
      return { field, message };
    }
  }
  if (err.code.startsWith("AVTR_PROVIDER")) {
    return { field: "engine_url", message };
  }
  if (err.code.startsWith("AVTR_SFU")) return { field: "transport", message };
  return { field: "form", message };
}

/** What the console remembers about a session started on the Try it page. */
export interface TrySessionRecord {
  tenant_id: string;
  created_at: number;
}

function ownerOf(consoleSessionId: string): string {
  return String(consoleSessionKey(consoleSessionId)[1]);
}

/** KV key of a Try-it session of one console session (by the hash of its cookie). */
export function trySessionKey(
  consoleSessionId: string,
  sessionId: string,
): Deno.KvKey {
  return ["console_try_sessions", ownerOf(consoleSessionId), sessionId];
}

/** Remembers that console session `consoleSessionId` started `sessionId` for `tenantId`. */
export async function rememberTrySession(
  deps: AppDeps,
  consoleSessionId: string,
  sessionId: string,
  tenantId: string,
): Promise<void> {
  const record: TrySessionRecord = {
    tenant_id: tenantId,
    created_at: deps.now(),
  };
  await kvTry(
    deps.kv.set(trySessionKey(consoleSessionId, sessionId), record, {
      expireIn: CONSOLE_SESSION_TTL_MS,
    }),
  );
}

/**
 * The tenant of `sessionId` when console session `consoleSessionId` started it on the
 * Try it page (within its lifetime), else null.
 */
export async function trySessionTenant(
  deps: AppDeps,
  consoleSessionId: string,
  sessionId: string,
): Promise<string | null> {
  const entry = await kvTry(
    deps.kv.get<TrySessionRecord>(trySessionKey(consoleSessionId, sessionId)),
  );
  const rec = entry.value;
  if (!rec || deps.now() - rec.created_at > CONSOLE_SESSION_TTL_MS) return null;
  return rec.tenant_id;
}
