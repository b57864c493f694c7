/** Who is calling: the authenticated principal of a request, and the scopes it may hold. */

export const SCOPES = [
  "sessions:read",
  "sessions:write",
  "keys:admin",
] as const;
export type Scope = typeof SCOPES[number];

export interface Principal {
  /** How the caller authenticated. */
  kind: "api_key" | "admin_key" | "idp";
  tenantId: string;
  scopes: readonly Scope[];
  /** The API key's id, for `api_key` principals. */
  keyId?: string;
  /** The identity-provider subject, for `idp` principals. */
  subject?: string;
}

/** The tenant of the bootstrap operator credential (`ADMIN_API_KEY`). */
export const ADMIN_TENANT = "admin";

/**
 * Who administers (DECISIONS 2): the operator (tenant `admin`: `ADMIN_API_KEY` and keys
 * minted for tenant `admin`) administers every tenant; any other tenant's `keys:admin`
 * key, or console session, administers its own tenant only. Every admin-surface function
 * in `lib/` takes one and filters by it at the source.
 */
export interface Administrator {
  tenantId: string;
}

/** The operator, for trusted local tools that hold the store itself (scripts/keys.ts). */
export const OPERATOR: Administrator = Object.freeze({
  tenantId: ADMIN_TENANT,
});

/** Whether `by` is the operator (tenant `admin`). */
export function isOperator(by: Administrator): boolean {
  return by.tenantId === ADMIN_TENANT;
}

/** Whether `by` may see and change `tenantId`'s resources. */
export function administers(by: Administrator, tenantId: string): boolean {
  return isOperator(by) || by.tenantId === tenantId;
}

/**
 * The tenant filter of a listing by `by` that asked for `requested` (undefined: every
 * tenant): the request itself for the operator; for a tenant administrator its own
 * tenant, or null when it asked for another one (the listing is then empty).
 */
export function visibleTenant(
  by: Administrator,
  requested: string | undefined,
): string | undefined | null {
  if (isOperator(by)) return requested;
  if (requested !== undefined && requested !== by.tenantId) return null;
  return by.tenantId;
}

/**
 * A key-shaped credential as a request presents it: the key id and the SHA-256 of the
 * secret, in the stored form (`secret_hash`). The secret itself is not kept. One hash per
 * request serves both the rate limiter (its subject) and the check against the record.
 */
export interface PresentedKey {
  keyId: string;
  secretHash: string;
}
