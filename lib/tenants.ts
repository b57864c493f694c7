/**
 * Per-tenant settings that override deployment defaults; today the concurrent-session
 * limit (`MAX_CONCURRENT_SESSIONS` otherwise). Managed from the admin console.
 */
import { TENANT_ID_PATTERN } from "./auth/api_keys.ts";
import type { AppDeps } from "./deps.ts";
import { ApiError } from "./errors.ts";
import { kvTry } from "./kv/store.ts";

export interface TenantSettings {
  /** Non-terminal sessions this tenant may hold at once; unset → the deployment default. */
  max_concurrent_sessions?: number;
  /** Epoch ms of the last change. */
  updated_at?: number;
}

/** The bounds an operator may set a tenant's concurrency limit to. */
export const MAX_CONCURRENT_SESSIONS_LIMIT = 100_000;

/** `["tenant_settings", tenantId]`. */
export function tenantSettingsKey(tenantId: string): Deno.KvKey {
  return ["tenant_settings", tenantId];
}

/** The stored settings of `tenantId` (empty when none are set). */
export async function getTenantSettings(
  deps: AppDeps,
  tenantId: string,
): Promise<TenantSettings> {
  const e = await kvTry(
    deps.kv.get<TenantSettings>(tenantSettingsKey(tenantId)),
  );
  return e.value ?? {};
}

/**
 * Replaces the settings of `tenantId`. `max_concurrent_sessions` must be an integer in
 * 1..100000, or null/undefined to fall back to the deployment default. Throws 400
 * `AVTR_REQUEST_INVALID` (param `max_concurrent_sessions`) otherwise.
 */
export async function setTenantSettings(
  deps: AppDeps,
  tenantId: string,
  settings: { max_concurrent_sessions?: number | null },
): Promise<TenantSettings> {
  if (!TENANT_ID_PATTERN.test(tenantId)) {
    throw new ApiError("AVTR_REQUEST_INVALID", "tenant_id is not valid", {
      param: "tenant_id",
    });
  }
  const limit = settings.max_concurrent_sessions;
  const next: TenantSettings = { updated_at: deps.now() };
  if (limit !== undefined && limit !== null) {
    if (
      !Number.isInteger(limit) || limit < 1 ||
      limit > MAX_CONCURRENT_SESSIONS_LIMIT
    ) {
      throw new ApiError(
        "AVTR_REQUEST_INVALID",
        `max_concurrent_sessions must be an integer from 1 to ${MAX_CONCURRENT_SESSIONS_LIMIT}`,
        { param: "max_concurrent_sessions" },
      );
    }
    next.max_concurrent_sessions = limit;
  }
  await kvTry(deps.kv.set(tenantSettingsKey(tenantId), next));
  return next;
}

/** Every tenant with stored settings, by tenant id. */
export async function listTenantSettings(
  deps: AppDeps,
): Promise<Array<{ tenant_id: string } & TenantSettings>> {
  return await kvTry(async () => {
    const out: Array<{ tenant_id: string } & TenantSettings> = [];
    const iter = deps.kv.list<TenantSettings>({ prefix: ["tenant_settings"] });
    for await (const e of iter) {
      out.push({ tenant_id: String(e.key[1]), ...e.value });
    }
    return out;
  });
}

/** The concurrent-session limit that applies to a tenant with `settings`. */
export function concurrencyLimit(
  deps: AppDeps,
  settings: TenantSettings | null,
): number {
  return settings?.max_concurrent_sessions ??
    deps.config.maxConcurrentSessions;
}
