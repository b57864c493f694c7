/**
 * Administering API keys (DECISIONS 2): looking one up, listing them a page at a time
 * and revoking them, each on behalf of an administrator who sees its own tenant's keys
 * only (or every tenant's, for the platform administrator).
 */
import { apiKeyLastUsedKey, lastUsedOf } from "./api_key_usage.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import {
  administers,
  type Administrator,
  visibleTenant,
} from "../principal.ts";
import { kvTry } from "../kv/store.ts";
import {
  apiKeyKey,
  type ApiKeyRecord,
  type ApiKeyView,
  invalidField,
  TENANT_ID_PATTERN,
  TENANT_ID_RULE,
  toView,
} from "./api_keys.ts";

const KEY_ID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * Revokes a key on behalf of `by`: sets `revoked_at` (checked against the versionstamp
 * read). Revoking a revoked key changes nothing and reports `alreadyRevoked`. Throws 404
 * `AVTR_API_KEY_NOT_FOUND` for an unknown key, and the same for another tenant's key
 * when `by` administers its own tenant only (DECISIONS 2).
 */
export async function revokeApiKey(
  deps: AppDeps,
  by: Administrator,
  keyId: string,
): Promise<{ alreadyRevoked: boolean }> {
  if (!KEY_ID_PATTERN.test(keyId)) throw keyNotFound();
  // A concurrent write to the record (another revoke) fails the check; re-read and retry.
  for (let attempt = 0; attempt < 5; attempt++) {
    const entry = await kvTry(deps.kv.get<ApiKeyRecord>(apiKeyKey(keyId)));
    if (entry.value === null || !administers(by, entry.value.tenant_id)) {
      throw keyNotFound();
    }
    if (entry.value.revoked_at !== undefined) return { alreadyRevoked: true };
    const res = await kvTry(
      deps.kv.atomic().check(entry).set(entry.key, {
        ...entry.value,
        revoked_at: deps.now(),
      }).commit(),
    );
    if (res.ok) {
      deps.log.info("api key revoked", {
        key_id: keyId,
        tenant: entry.value.tenant_id,
      });
      return { alreadyRevoked: false };
    }
  }
  throw new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "The key could not be revoked right now",
  );
}

function keyNotFound(): ApiError {
  return new ApiError("AVTR_API_KEY_NOT_FOUND", "No API key with this key_id");
}

/**
 * One key's view (with `last_used_at`), or null when there is no such key or `by` does
 * not administer its tenant.
 */
export async function getApiKey(
  deps: AppDeps,
  by: Administrator,
  keyId: string,
): Promise<ApiKeyView | null> {
  if (!KEY_ID_PATTERN.test(keyId)) return null;
  const [rec, used] = await kvTry(
    deps.kv.getMany<[ApiKeyRecord, Deno.KvU64]>([
      apiKeyKey(keyId),
      apiKeyLastUsedKey(keyId),
    ]),
  );
  if (rec.value === null || !administers(by, rec.value.tenant_id)) return null;
  return toView(rec.value, lastUsedOf(deps, keyId, used.value));
}

/**
 * Lists keys newest first, all of them or one tenant's, `limit` (1..100, default 50) a
 * page; `cursor` continues where the previous page stopped (null on the last page).
 * A tenant administrator (`by`) sees its own tenant's keys only, whatever it asks for.
 */
export async function listApiKeys(
  deps: AppDeps,
  by: Administrator,
  options: { tenant_id?: string; cursor?: string; limit?: number } = {},
): Promise<{ keys: ApiKeyView[]; cursor: string | null }> {
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw invalidField("limit", "Must be 1 to 100");
  }
  if (
    options.tenant_id !== undefined &&
    !TENANT_ID_PATTERN.test(options.tenant_id)
  ) {
    throw invalidField("tenant_id", TENANT_ID_RULE);
  }
  const tenant = visibleTenant(by, options.tenant_id);
  if (tenant === null) return { keys: [], cursor: null };
  const prefix = tenant === undefined
    ? ["api_keys"]
    : ["api_keys_by_tenant", tenant];
  const ids: string[] = [];
  const records = new Map<string, ApiKeyRecord>();
  let next = "";
  try {
    await kvTry(async () => {
      const iter = deps.kv.list({ prefix }, {
        reverse: true,
        limit,
        cursor: options.cursor || undefined,
      });
      for await (const entry of iter) {
        const id = String(entry.key[entry.key.length - 1]);
        ids.push(id);
        if (tenant === undefined) records.set(id, entry.value as ApiKeyRecord);
      }
      next = iter.cursor;
    });
  } catch (err) {
    // kv.list rejects a malformed cursor with a TypeError naming it.
    if (options.cursor && err instanceof ApiError && isCursorError(err.cause)) {
      throw invalidField("cursor", "Not a valid cursor");
    }
    throw err;
  }
  const keys: ApiKeyView[] = [];
  for (let i = 0; i < ids.length; i += 5) {
    const chunk = ids.slice(i, i + 5);
    const wanted: Deno.KvKey[] = [];
    for (const id of chunk) {
      if (tenant !== undefined) wanted.push(apiKeyKey(id));
      wanted.push(apiKeyLastUsedKey(id));
    }
    const got = await kvTry(deps.kv.getMany(wanted));
    let j = 0;
    for (const id of chunk) {
      if (tenant !== undefined) {
        const rec = got[j++].value as ApiKeyRecord | null;
        if (rec !== null) records.set(id, rec);
      }
      const used = got[j++].value as Deno.KvU64 | null;
      const rec = records.get(id);
      if (rec) keys.push(toView(rec, lastUsedOf(deps, id, used)));
    }
  }
  const cursor = ids.length === limit && next !== "" ? next : null;
  return { keys, cursor };
}

function isCursorError(err: unknown): boolean {
  return err instanceof Error && /cursor/i.test(err.message);
}
