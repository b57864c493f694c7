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
