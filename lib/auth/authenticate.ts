/**
 * REST authentication (SPEC 5.1): reads the credential from `Authorization: Bearer` or
 * `x-api-key`, resolves it to a `Principal`, and checks the route's scope. Resolution and
 * any KV reads the route needs (`prefetch`) share one `kv.getMany` round trip (merged
 * with concurrent requests' reads by lib/kv/batch.ts), and no request writes to KV
 * (DECISIONS 9): key use is counted in memory (lib/auth/api_key_usage.ts).
 * Key validity is never cached, so a revocation holds from the next request on, on every
 * instance. A credential that verifies is counted against its principal's rate-limit
 * window (lib/api/rate_charge.ts `chargeVerified`), never against its client address.
 */
import { noteKeyUsed, startLastUsedFlusher } from "./api_key_usage.ts";
import {
  apiKeyKey,
  parseApiKey,
  type PresentedKey,
  presentKey,
  principalFromKeyEntry,
} from "./api_keys.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import type { Ctx, RequestCredential } from "../api/http.ts";
import {
  idpKeySet,
  idpPrincipal,
  type IdpToken,
  looksLikeJwt,
  verifyIdpToken,
} from "./idp.ts";
import { idpOrgKey } from "./idp_orgs.ts";
import {
  ADMIN_TENANT,
  type Principal,
  type Scope,
  SCOPES,
} from "../principal.ts";
import { kvReadBatcher } from "../kv/batch.ts";
import { chargeVerified } from "../api/rate_charge.ts";
import { keySubject, OPERATOR_SUBJECT } from "../api/rate_subjects.ts";

/** `kv.getMany` reads at most this many keys; one of them may be the credential's own. */
export const MAX_PREFETCH = 9;

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

/**
 * The request's credential and, when it is key-shaped, the key it presents (its secret
 * hashed once). Worked out on first use and kept on `ctx.state`, so the rate limiter and
 * authentication share one hash per request.
 */
export function requestCredential(ctx: Ctx): RequestCredential {
  let c = ctx.state.credential;
  if (c === undefined) {
    const value = credentialFrom(ctx.req);
    c = { value, key: value === null ? null : presentKey(value) };
    ctx.state.credential = c;
  }
  return c;
}

/**
 * Constant-time string equality: the time depends only on the longer length, never on
 * where the strings differ (a XOR over UTF-16 code units, no early exit).
 */
export function safeEqual(a: string, b: string): boolean {
  const len = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  for (let i = 0; i < len; i++) {
    // Past the end charCodeAt gives NaN, which `| 0` turns into 0.
    diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  }
  return diff === 0;
}

/** `ADMIN_API_KEY` → whether it is key-shaped (`avk_…`), for `mayBeAdminKey`. */
let adminShape: { admin: string; keyShaped: boolean } | undefined;

/**
 * Whether a credential may be `admin`. A key-shaped credential (`key` not null) cannot
 * equal an admin key that is not key-shaped, so the comparison is skipped for it: which
 * path runs depends only on the shapes, never on how the two strings compare.
 */
function mayBeAdminKey(admin: string, key: PresentedKey | null): boolean {
  if (key === null) return true;
  if (adminShape?.admin !== admin) {
    adminShape = { admin, keyShaped: parseApiKey(admin) !== null };
  }
  return adminShape.keyShaped;
}

export interface AuthResult {
  principal: Principal;
  /** The entries of `prefetch`, in order, read in the same round trip as the key. */
  entries: Deno.KvEntryMaybe<unknown>[];
}

/**
 * Authenticates the request and checks `scope`. Sets `ctx.state.principal`. Throws 401
 * (`AVTR_AUTH_MISSING_CREDENTIALS`, `AVTR_AUTH_INVALID_KEY`, `AVTR_AUTH_EXPIRED_TOKEN`),
 * 403 (`AVTR_AUTH_MISSING_SCOPE`, `AVTR_AUTH_FORBIDDEN`, `AVTR_AUTH_IDP_ORG_UNMAPPED`) or
 * 429 (the principal's rate-limit window is spent).
 * The key record (or IdP org mapping) and the `prefetch` keys (at most `MAX_PREFETCH`)
 * are read in one `kv.getMany`; `entries` holds the prefetched ones, in order.
 */
export async function authenticate(
  ctx: Ctx,
  scope: Scope,
  prefetch: Deno.KvKey[] = [],
): Promise<AuthResult> {
  if (prefetch.length > MAX_PREFETCH) {
    throw new RangeError(
      `authenticate() prefetches at most ${MAX_PREFETCH} keys`,
    );
  }
  const result = await verifyCredential(ctx, prefetch);
  if (!result.principal.scopes.includes(scope)) {
    throw new ApiError(
      "AVTR_AUTH_MISSING_SCOPE",
      `The credential lacks the ${scope} scope`,
    );
  }
  return result;
}

/**
 * Resolves the request's credential to its principal (no scope check), reading the
 * `prefetch` keys in the same round trip, and counts the request against the verified
 * principal's rate-limit window as soon as it is known (429 when spent). Sets
 * `ctx.state.principal`, and `ctx.state.authTried` whatever the outcome.
 */
export async function verifyCredential(
  ctx: Ctx,
  prefetch: Deno.KvKey[] = [],
): Promise<AuthResult> {
  ctx.state.authTried = true;
  const { value: credential, key } = requestCredential(ctx);
  if (credential === null) {
    throw new ApiError(
      "AVTR_AUTH_MISSING_CREDENTIALS",
      "No API key was supplied",
    );
  }
  const deps = ctx.deps;
  const admin = deps.config.adminApiKey;
  let principal: Principal;
  let entries: Deno.KvEntryMaybe<unknown>[];
  if (
    admin !== undefined && mayBeAdminKey(admin, key) &&
    safeEqual(credential, admin)
  ) {
    principal = { kind: "admin_key", tenantId: ADMIN_TENANT, scopes: SCOPES };
    ctx.state.principal = principal;
    chargeVerified(ctx, OPERATOR_SUBJECT);
    entries = prefetch.length > 0
      ? await kvReadBatcher(deps.readKv).getMany(prefetch)
      : [];
  } else if (deps.config.idp !== null && looksLikeJwt(credential)) {
    const token: IdpToken = await verifyIdpToken(deps, credential);
    const limiter = ctx.state.rateLimiter;
    if (limiter) chargeVerified(ctx, limiter.idpSubject(token.subject));
    if (token.orgId === null) {
      principal = idpPrincipal(token, null);
      entries = [];
    } else {
      const got = await kvReadBatcher(deps.readKv).getMany([
        idpOrgKey(token.orgId),
        ...prefetch,
      ]);
      principal = idpPrincipal(token, got[0]);
      entries = got.slice(1);
    }
  } else {
    if (key === null) {
      throw new ApiError("AVTR_AUTH_INVALID_KEY", "The API key is not valid");
    }
    const got = await kvReadBatcher(deps.readKv).getMany([
      apiKeyKey(key.keyId),
      ...prefetch,
    ]);
    principal = principalFromKeyEntry(got[0], key, deps.now());
    ctx.state.principal = principal;
    noteKeyUsed(deps, key.keyId);
    chargeVerified(ctx, keySubject(key.keyId));
    entries = got.slice(1);
  }
  ctx.state.principal = principal;
  return { principal, entries };
}

/**
 * Starts authentication's background work on `deps` (called by `initServices`): the
 * batched `last_used_at` flusher, and the IdP key set, so a malformed inline `IDP_JWKS`
 * fails the start with a `ConfigError` instead of every request.
 */
export function initAuth(deps: AppDeps): void {
  if (deps.config.idp !== null) idpKeySet(deps);
  startLastUsedFlusher(deps);
}
