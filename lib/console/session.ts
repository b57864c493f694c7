/**
 * Console sessions: a random id in a cookie, a record in KV keyed by the id's hash. The
 * record holds who signed in (the key's id and scopes), never the API key itself; every
 * request re-checks that the key is still valid, unrevoked and holds `keys:admin`.
 */
import { createHash } from "node:crypto";
import { getApiKey } from "../auth/api_key_admin.ts";
import { verifyApiKey } from "../auth/api_keys.ts";
import { safeEqual } from "../auth/authenticate.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { randomToken } from "../ids.ts";
import {
  ADMIN_TENANT,
  type Administrator,
  isOperator,
  type Principal,
  SCOPES,
} from "../principal.ts";
import { kvTry } from "../kv/store.ts";

/** How long a console session lives after sign-in (absolute, not sliding). */
export const CONSOLE_SESSION_TTL_MS = 8 * 60 * 60 * 1000;

/** What the console remembers about who signed in. */
export interface ConsoleSessionRecord {
  kind: "api_key" | "admin_key";
  tenant_id: string;
  key_id?: string;
  scopes: string[];
  /** For `admin_key`: a hash of ADMIN_API_KEY, so rotating it signs the console out. */
  admin_fingerprint?: string;
  /** The synchronizer token every form of this session carries. */
  csrf: string;
  created_at: number;
  expires_at: number;
}

export interface ConsoleSession {
  /** The cookie value (only ever in the cookie; KV holds its hash). */
  id: string;
  record: ConsoleSessionRecord;
}

function hashId(id: string): string {
  return createHash("sha256").update(id).digest("base64url");
}

/** KV key of a console session, by the hash of its cookie value. */
export function consoleSessionKey(id: string): Deno.KvKey {
  return ["console_sessions", hashId(id)];
}

function adminFingerprint(adminKey: string): string {
  return createHash("sha256").update("avtr-console-admin\0" + adminKey).digest(
    "base64url",
  );
}

export type SignInResult =
  | { ok: true; principal: Principal }
  | { ok: false; reason: "invalid" | "expired" | "scope" };

/**
 * Checks a credential typed into the sign-in form: ADMIN_API_KEY (constant time) or a
 * stored API key holding `keys:admin`.
 */
export async function checkCredential(
  deps: AppDeps,
  credential: string,
): Promise<SignInResult> {
  const admin = deps.config.adminApiKey;
  if (admin !== undefined && safeEqual(credential, admin)) {
    return {
      ok: true,
      principal: { kind: "admin_key", tenantId: ADMIN_TENANT, scopes: SCOPES },
    };
  }
  let principal: Principal;
  try {
    principal = await verifyApiKey(deps, credential);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      return {
        ok: false,
        reason: err.code === "AVTR_AUTH_EXPIRED_TOKEN" ? "expired" : "invalid",
      };
    }
    throw err;
  }
  if (!principal.scopes.includes("keys:admin")) {
    return { ok: false, reason: "scope" };
  }
  return { ok: true, principal };
}

/** Starts a console session for `principal`; returns the id for the cookie. */
export async function createConsoleSession(
  deps: AppDeps,
  principal: Principal,
): Promise<ConsoleSession> {
  const now = deps.now();
  const id = randomToken(32);
  const record: ConsoleSessionRecord = {
    kind: principal.kind === "admin_key" ? "admin_key" : "api_key",
    tenant_id: principal.tenantId,
    scopes: [...principal.scopes],
    csrf: randomToken(32),
    created_at: now,
    expires_at: now + CONSOLE_SESSION_TTL_MS,
  };
  if (principal.keyId) record.key_id = principal.keyId;
  if (principal.kind === "admin_key" && deps.config.adminApiKey) {
    record.admin_fingerprint = adminFingerprint(deps.config.adminApiKey);
  }
  const res = await kvTry(
    deps.kv.atomic().check({ key: consoleSessionKey(id), versionstamp: null })
      .set(consoleSessionKey(id), record, {
        expireIn: CONSOLE_SESSION_TTL_MS,
      }).commit(),
  );
  // 256 random bits never collide; a failed check means the store misbehaved.
  if (!res.ok) throw new Error("console session id collision");
  return { id, record };
}

/** Deletes a console session (sign out). */
export async function deleteConsoleSession(
  deps: AppDeps,
  id: string,
): Promise<void> {
  await kvTry(deps.kv.delete(consoleSessionKey(id)));
}

/**
 * Loads the console session behind cookie value `id` and re-checks its credential: the
 * stored expiry, ADMIN_API_KEY unchanged, or the API key still present, unrevoked,
 * unexpired and holding `keys:admin`. Returns null (and forgets the session) otherwise.
 */
export async function loadConsoleSession(
  deps: AppDeps,
  id: string,
): Promise<ConsoleSession | null> {
  const entry = await kvTry(
    deps.kv.get<ConsoleSessionRecord>(consoleSessionKey(id)),
  );
  const record = entry.value;
  if (!record) return null;
  if (!(await credentialStillValid(deps, record))) {
    await deleteConsoleSession(deps, id);
    return null;
  }
  return { id, record };
}

async function credentialStillValid(
  deps: AppDeps,
  record: ConsoleSessionRecord,
): Promise<boolean> {
  const now = deps.now();
  if (record.expires_at <= now) return false;
  if (record.kind === "admin_key") {
    const admin = deps.config.adminApiKey;
    return admin !== undefined && record.admin_fingerprint !== undefined &&
      safeEqual(adminFingerprint(admin), record.admin_fingerprint);
  }
  if (!record.key_id) return false;
  const key = await getApiKey(deps, administratorOf(record), record.key_id);
  if (!key) return false;
  if (key.revoked_at !== undefined && key.revoked_at !== null) return false;
  if (
    key.expires_at !== undefined && key.expires_at !== null &&
    key.expires_at <= now
  ) {
    return false;
  }
  return key.scopes.includes("keys:admin");
}

/**
 * Who a console session administers (DECISIONS 2): the operator (tenant `admin`) every
 * tenant, any other tenant's administrator its own tenant only.
 */
export function administratorOf(record: ConsoleSessionRecord): Administrator {
  return { tenantId: record.tenant_id };
}

/** A short label for who is signed in, for the header. */
export function signedInAs(record: ConsoleSessionRecord): string {
  if (record.kind === "admin_key") return "operator (ADMIN_API_KEY)";
  const role = isOperator(administratorOf(record))
    ? "operator"
    : "tenant administrator";
  return `key ${record.key_id} · ${record.tenant_id} (${role})`;
}
