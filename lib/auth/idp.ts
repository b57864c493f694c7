/**
 * Identity-provider bearer tokens (DECISIONS 1 and 3): JWTs signed by the issuer in
 * `IDP_ISSUER`, checked against its JWKS (`IDP_JWKS_URL`, fetched and cached by jose, or
 * inline `IDP_JWKS`). Verification needs no KV; the org → tenant lookup that follows is
 * read by `lib/auth/authenticate.ts` in the request's single `getMany`.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors as joseErrors,
  type JWTPayload,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import { ConfigError } from "../config.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { ORG_ID_PATTERN, tenantOfEntry } from "./idp_orgs.ts";
import { type Principal, type Scope, SCOPES } from "../principal.ts";

/** Asymmetric algorithms only: a JWKS never holds a shared secret we would accept. */
const ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];
/** Allowed clock skew between the issuer and this service, in seconds. */
export const CLOCK_TOLERANCE_S = 30;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The scopes an identity-provider token can be granted. `keys:admin` (a tenant's key
 * administration, every tenant's for the operator) is never granted to an IdP token: a
 * `scope` claim naming it is ignored; administrators use API keys or ADMIN_API_KEY.
 */
export const IDP_SCOPES: readonly Scope[] = SCOPES.filter((s) =>
  s !== "keys:admin"
);

/** A verified token's facts that authorization needs. */
export interface IdpToken {
  subject: string;
  /** The `org_id` claim, when it is a usable string. */
  orgId: string | null;
  /** The token's `scope` claim intersected with `IDP_SCOPES` (never `keys:admin`). */
  scopes: Scope[];
}

/** Whether a credential is shaped like a compact JWS (three base64url parts). */
export function looksLikeJwt(credential: string): boolean {
  return JWT_SHAPE.test(credential);
}

const keySets = new WeakMap<AppDeps, JWTVerifyGetKey>();

/**
 * The JWKS of `deps.config.idp`, built once per app. Throws `ConfigError` when inline
 * `IDP_JWKS` is not a JSON key set (called at start so that surfaces immediately).
 */
export function idpKeySet(deps: AppDeps): JWTVerifyGetKey {
  const existing = keySets.get(deps);
  if (existing) return existing;
  const idp = deps.config.idp;
  if (idp === null) throw new ConfigError("No identity provider configured");
  let keySet: JWTVerifyGetKey;
  if (idp.jwks !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(idp.jwks);
      keySet = createLocalJWKSet(
        parsed as Parameters<typeof createLocalJWKSet>[0],
      );
    } catch {
      throw new ConfigError(
        'IDP_JWKS must be a JSON Web Key Set ({"keys": [...]})',
      );
    }
  } else {
    let url: URL;
    try {
      url = new URL(idp.jwksUrl ?? "");
    } catch {
      throw new ConfigError("IDP_JWKS_URL must be a URL");
    }
    keySet = createRemoteJWKSet(url, { timeoutDuration: 5000 });
  }
  keySets.set(deps, keySet);
  return keySet;
}

/**
 * Verifies `token` (signature, issuer, audience `IDP_AUDIENCE`, `exp` with `deps.now()`,
 * a string `sub`) and the `azp` allow-list. Throws 401 `AVTR_AUTH_INVALID_KEY` (bad
 * signature, issuer, audience, shape, unknown key), 401 `AVTR_AUTH_EXPIRED_TOKEN`, 403 `AVTR_AUTH_FORBIDDEN` (`azp` not allowed), or
 * the retryable 503 `AVTR_SESSION_STATE_UNAVAILABLE` when the JWKS cannot be fetched.
 */
export async function verifyIdpToken(
  deps: AppDeps,
  token: string,
): Promise<IdpToken> {
  const idp = deps.config.idp;
  if (idp === null) throw invalid();
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, idpKeySet(deps), {
      issuer: idp.issuer,
      audience: idp.audience,
      algorithms: ALGORITHMS,
      requiredClaims: ["exp", "sub"],
      currentDate: new Date(deps.now()),
      clockTolerance: CLOCK_TOLERANCE_S,
    }));
  } catch (err) {
    throw mapJoseError(deps, err);
  }
  if (idp.azpAllowlist.length > 0) {
    const azp = payload.azp;
    if (typeof azp !== "string" || !idp.azpAllowlist.includes(azp)) {
      throw new ApiError(
        "AVTR_AUTH_FORBIDDEN",
        "The token's authorized party is not allowed",
      );
    }
  }
  if (typeof payload.sub !== "string" || payload.sub === "") throw invalid();
  const sub = payload.sub;
  const org = payload.org_id;
  const scopeClaim = typeof payload.scope === "string" ? payload.scope : "";
  const granted = new Set(scopeClaim.split(" "));
  return {
    subject: sub,
    orgId: typeof org === "string" && ORG_ID_PATTERN.test(org) ? org : null,
    scopes: IDP_SCOPES.filter((s) => granted.has(s)),
  };
}

/**
 * The principal of a verified token, given the `idpOrgKey` entry of its org. Throws 403
 * `AVTR_AUTH_IDP_ORG_UNMAPPED` when the token has no org or the org is not mapped.
 */
export function idpPrincipal(
  token: IdpToken,
  orgEntry: Deno.KvEntryMaybe<unknown> | null,
): Principal {
  const tenantId = orgEntry === null ? null : tenantOfEntry(orgEntry);
  if (tenantId === null) {
    throw new ApiError(
      "AVTR_AUTH_IDP_ORG_UNMAPPED",
      "The token's organization is not mapped to a tenant",
    );
  }
  return {
    kind: "idp",
    tenantId,
    scopes: token.scopes,
    subject: token.subject,
  };
}

function invalid(): ApiError {
  return new ApiError(
    "AVTR_AUTH_INVALID_KEY",
    "The identity-provider token is not valid",
  );
}

function mapJoseError(deps: AppDeps, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof joseErrors.JWTExpired) {
    return new ApiError(
      "AVTR_AUTH_EXPIRED_TOKEN",
      "The identity-provider token has expired",
    );
  }
  // The key set could not be fetched or read: the issuer's side, worth a retry.
  const unavailable = err instanceof joseErrors.JWKSTimeout ||
    err instanceof joseErrors.JWKSInvalid ||
    !(err instanceof joseErrors.JOSEError) ||
    (err as { code?: string }).code === "ERR_JOSE_GENERIC";
  if (unavailable) {
    deps.log.warn("identity provider key set unavailable", {
      err: err instanceof Error ? err.message : String(err),
    });
    return new ApiError(
      "AVTR_SESSION_STATE_UNAVAILABLE",
      "The identity provider's signing keys are temporarily unavailable",
      { cause: err },
    );
  }
  return invalid();
}
