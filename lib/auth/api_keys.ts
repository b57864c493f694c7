/**
 * API keys (DECISIONS 2): the stored record, minting and verifying (listing and revoking
 * are in ./api_key_admin.ts). A key's plaintext is
 * `avk_<key_id>_<secret>`; only a SHA-256 hash of the secret is stored, and the plaintext
 * leaves this module exactly once, in `createApiKey`'s result. `last_used_at` is counted
 * in memory and merged into KV in batches (./api_key_usage.ts), never per request.
 */
import { createHash } from "node:crypto";
import { noteKeyUsed } from "./api_key_usage.ts";
import { parseOrThrow } from "../api/body.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { randomToken, ulid } from "../ids.ts";
import {
  administers,
  type Administrator,
  type Principal,
  type Scope,
} from "../principal.ts";
import { kvTry } from "../kv/store.ts";
import {
  type ApiKeyCreateInput,
  apiKeyCreateSchema,
} from "../api/key_schemas.ts";

// The key bodies' schemas live with the other REST schemas; here for the key store's
// callers, as before.
export {
  type ApiKeyCreated,
  apiKeyCreatedSchema,
  type ApiKeyCreateInput,
  apiKeyCreateSchema,
  TENANT_ID_PATTERN,
  TENANT_ID_RULE,
} from "../api/key_schemas.ts";

/** The plaintext prefix of every API key. */
export const API_KEY_PREFIX = "avk_";
const API_KEY_PATTERN = /^avk_([0-9A-HJKMNP-TV-Z]{26})_([A-Za-z0-9_-]{43})$/;

/** The stored record of a key (never leaves `lib/`: the hash stays here). */
export interface ApiKeyRecord {
  key_id: string;
  tenant_id: string;
  scopes: Scope[];
  name?: string;
  created_at: number;
  expires_at?: number;
  revoked_at?: number;
  /** base64url SHA-256 of the secret part of the plaintext. */
  secret_hash: string;
}

/** What callers may see of a key: the record without its hash, plus `last_used_at`. */
export type ApiKeyView = Omit<ApiKeyRecord, "secret_hash"> & {
  last_used_at?: number;
};

/** `["api_keys", keyId]` → `ApiKeyRecord`. */
export function apiKeyKey(keyId: string): Deno.KvKey {
  return ["api_keys", keyId];
}

/** `["api_keys_by_tenant", tenantId, keyId]` → keyId. */
export function apiKeyByTenantKey(tenantId: string, keyId: string): Deno.KvKey {
  return ["api_keys_by_tenant", tenantId, keyId];
}

/** Splits a plaintext key into its id and secret, or null when it is not key-shaped. */
export function parseApiKey(
  plaintext: string,
): { keyId: string; secret: string } | null {
  const m = API_KEY_PATTERN.exec(plaintext);
  return m ? { keyId: m[1], secret: m[2] } : null;
}

export type { PresentedKey } from "../principal.ts";
import type { PresentedKey } from "../principal.ts";

/** The `PresentedKey` of `plaintext`, or null when it is not key-shaped. */
export function presentKey(plaintext: string): PresentedKey | null {
  const parsed = parseApiKey(plaintext);
  return parsed === null
    ? null
    : { keyId: parsed.keyId, secretHash: hashSecret(parsed.secret) };
}

function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("base64url");
}

/**
 * Whether two secret hashes are equal, in time independent of where they differ. The
 * digests are compared in their stored text form (canonical base64url, as `hashSecret`
 * writes it), which spares decoding the stored hash on every request.
 */
function hashMatches(presented: string, stored: string): boolean {
  let diff = presented.length ^ stored.length;
  for (let i = 0; i < presented.length; i++) {
    // Past the end of `stored` charCodeAt gives NaN, which `| 0` turns into 0.
    diff |= presented.charCodeAt(i) ^ (stored.charCodeAt(i) | 0);
  }
  return diff === 0;
}

/** The view of `record` callers may see (no hash), with `lastUsed` when known. */
export function toView(record: ApiKeyRecord, lastUsed?: number): ApiKeyView {
  const view: ApiKeyView = {
    key_id: record.key_id,
    tenant_id: record.tenant_id,
    scopes: [...record.scopes],
    created_at: record.created_at,
  };
  if (record.name !== undefined) view.name = record.name;
  if (record.expires_at !== undefined) view.expires_at = record.expires_at;
  if (record.revoked_at !== undefined) view.revoked_at = record.revoked_at;
  if (lastUsed !== undefined) view.last_used_at = lastUsed;
  return view;
}

/**
 * Mints a key on behalf of `by`. Validates `input` (400 `AVTR_REQUEST_INVALID` with
 * `param`, including an `expires_at` not after `deps.now()`); a tenant administrator
 * minting for another tenant → 403 `AVTR_AUTH_FORBIDDEN` (DECISIONS 2). Stores the
 * record and its tenant index in one atomic create, and returns the view plus the
 * plaintext, which is never stored.
 */
export async function createApiKey(
  deps: AppDeps,
  by: Administrator,
  input: ApiKeyCreateInput,
): Promise<{ key: ApiKeyView; api_key: string }> {
  const data = parseOrThrow(apiKeyCreateSchema, input);
  if (!administers(by, data.tenant_id)) {
    throw new ApiError(
      "AVTR_AUTH_FORBIDDEN",
      "This key administers its own tenant only: it cannot mint keys for another tenant",
    );
  }
  const now = deps.now();
  if (data.expires_at !== undefined && data.expires_at <= now) {
    throw invalidField("expires_at", "Must be in the future");
  }
  // A ULID collision is practically impossible; a failed create retries with a new id.
  for (let attempt = 0; attempt < 3; attempt++) {
    const keyId = ulid(now);
    const secret = randomToken(32);
    const record: ApiKeyRecord = {
      key_id: keyId,
      tenant_id: data.tenant_id,
      scopes: [...data.scopes],
      created_at: now,
      secret_hash: hashSecret(secret),
    };
    if (data.name !== undefined) record.name = data.name;
    if (data.expires_at !== undefined) record.expires_at = data.expires_at;
    const primary = apiKeyKey(keyId);
    const index = apiKeyByTenantKey(data.tenant_id, keyId);
    const res = await kvTry(
      deps.kv.atomic()
        .check({ key: primary, versionstamp: null })
        .check({ key: index, versionstamp: null })
        .set(primary, record)
        .set(index, keyId)
        .commit(),
    );
    if (res.ok) {
      deps.log.info("api key created", {
        key_id: keyId,
        tenant: data.tenant_id,
        scopes: data.scopes,
      });
      return { key: toView(record), api_key: `avk_${keyId}_${secret}` };
    }
  }
  throw new ApiError("AVTR_INTERNAL_ERROR", "Could not allocate a key id");
}

/** 400 `AVTR_REQUEST_INVALID` naming `param` and the rule it broke. */
export function invalidField(param: string, rule: string): ApiError {
  return new ApiError("AVTR_REQUEST_INVALID", `${param}: ${rule}`, { param });
}

/**
 * Checks a presented key against its stored entry: unknown, wrong secret or revoked →
 * 401 `AVTR_AUTH_INVALID_KEY`; past `expires_at` → 401 `AVTR_AUTH_EXPIRED_TOKEN`.
 * `entry` is the `apiKeyKey` entry (read by the caller, so it can share a round trip).
 */
export function principalFromKeyEntry(
  entry: Deno.KvEntryMaybe<unknown>,
  key: PresentedKey,
  now: number,
): Principal {
  const rec = entry.value as ApiKeyRecord | null;
  if (rec === null || !hashMatches(key.secretHash, rec.secret_hash)) {
    throw invalidKey();
  }
  if (rec.revoked_at !== undefined) throw invalidKey();
  if (rec.expires_at !== undefined && now >= rec.expires_at) {
    throw new ApiError("AVTR_AUTH_EXPIRED_TOKEN", "The API key has expired");
  }
  return {
    kind: "api_key",
    tenantId: rec.tenant_id,
    scopes: [...rec.scopes],
    keyId: rec.key_id,
  };
}

function invalidKey(): ApiError {
  return new ApiError("AVTR_AUTH_INVALID_KEY", "The API key is not valid");
}

/**
 * Resolves a plaintext key to its principal with one KV read (the console's sign-in uses
 * it). Throws 401 `AVTR_AUTH_INVALID_KEY` or `AVTR_AUTH_EXPIRED_TOKEN`.
 */
export async function verifyApiKey(
  deps: AppDeps,
  plaintext: string,
): Promise<Principal> {
  const key = presentKey(plaintext);
  if (key === null) throw invalidKey();
  const entry = await kvTry(deps.kv.get(apiKeyKey(key.keyId)));
  const principal = principalFromKeyEntry(entry, key, deps.now());
  noteKeyUsed(deps, key.keyId);
  return principal;
}
