/**
 * Identity-provider organizations mapped to tenants of this service (DECISIONS 3): a
 * token whose `org_id` has no mapping is refused with 403 `AVTR_AUTH_IDP_ORG_UNMAPPED`.
 * Operators manage the mappings in the admin console.
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { kvTry } from "../kv/store.ts";

/** An `org_id` claim value: 1..200 printable ASCII characters. */
export const ORG_ID_PATTERN = /^[\x21-\x7e]{1,200}$/;
const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export interface OrgMapping {
  org_id: string;
  tenant_id: string;
  created_at: number;
}

/** `["idp_org_tenants", orgId]` → `OrgMapping`. */
export function idpOrgKey(orgId: string): Deno.KvKey {
  return ["idp_org_tenants", orgId];
}

/** The tenant a mapping entry names, or null when the entry is empty or malformed. */
export function tenantOfEntry(
  entry: Deno.KvEntryMaybe<unknown>,
): string | null {
  const v = entry.value as OrgMapping | null;
  return v !== null && typeof v.tenant_id === "string" ? v.tenant_id : null;
}

/**
 * Maps `orgId` to `tenantId`, replacing any earlier mapping. Throws 400
 * `AVTR_REQUEST_INVALID` (param `org_id` or `tenant_id`) for a malformed value.
 */
export async function setOrgMapping(
  deps: AppDeps,
  orgId: string,
  tenantId: string,
): Promise<OrgMapping> {
  if (!ORG_ID_PATTERN.test(orgId)) {
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "org_id: Must be 1 to 200 printable ASCII characters without spaces",
      { param: "org_id" },
    );
  }
  if (!TENANT_ID_PATTERN.test(tenantId)) {
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "tenant_id: Must be 1 to 64 characters of A-Z, a-z, 0-9, _ or -",
      { param: "tenant_id" },
    );
  }
  const mapping: OrgMapping = {
    org_id: orgId,
    tenant_id: tenantId,
    created_at: deps.now(),
  };
  // A plain set: the last operator's mapping wins, which is what "replace" means here.
  const res = await kvTry(
    deps.kv.atomic().set(idpOrgKey(orgId), mapping).commit(),
  );
  if (!res.ok) {
    throw new ApiError(
      "AVTR_SESSION_STATE_UNAVAILABLE",
      "The mapping could not be saved right now",
    );
  }
  deps.log.info("idp org mapped", { org_id: orgId, tenant: tenantId });
  return mapping;
}

/** Removes the mapping of `orgId`; returns whether one existed. */
export async function deleteOrgMapping(
  deps: AppDeps,
  orgId: string,
): Promise<boolean> {
  if (!ORG_ID_PATTERN.test(orgId)) return false;
  const entry = await kvTry(deps.kv.get(idpOrgKey(orgId)));
  if (entry.value === null) return false;
  const res = await kvTry(
    deps.kv.atomic().check(entry).delete(entry.key).commit(),
  );
  // A concurrent change (re-map or delete) wins; report what this call did.
  if (res.ok) deps.log.info("idp org unmapped", { org_id: orgId });
  return res.ok;
}

/** Every mapping, ordered by `org_id`. */
export async function listOrgMappings(deps: AppDeps): Promise<OrgMapping[]> {
  return await kvTry(async () => {
    const out: OrgMapping[] = [];
    for await (
      const e of deps.kv.list<OrgMapping>({ prefix: ["idp_org_tenants"] })
    ) {
      out.push(e.value);
    }
    return out;
  });
}

/** The tenant `orgId` maps to, or null. */
export async function getOrgTenant(
  deps: AppDeps,
  orgId: string,
): Promise<string | null> {
  if (!ORG_ID_PATTERN.test(orgId)) return null;
  return tenantOfEntry(await kvTry(deps.kv.get(idpOrgKey(orgId))));
}
