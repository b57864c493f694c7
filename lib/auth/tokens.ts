/**
 * Media tokens (DECISIONS 5): compact, URL-safe, HMAC-SHA256-signed strings bound to one
 * session, carrying a purpose, a 5-minute expiry and a random nonce. Format:
 * `mt1.<base64url(JSON payload)>.<base64url(HMAC)>`, the MAC covering `mt1.<payload>`.
 * Tokens are never stored: a verifier needs only the shared `TOKEN_SECRET`.
 */
import { timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../deps.ts";
import { mac, requireTokenSecret } from "../token_secret.ts";

export { deriveKey, requireTokenSecret } from "../token_secret.ts";
import { base64url, fromBase64url } from "../ids.ts";

/** `client`: the `client_token`; `session`: `stream_metadata.session_token`. */
export type TokenPurpose = "client" | "session";

/** Purposes that authorize the media socket. */
export const MEDIA_PURPOSES: readonly TokenPurpose[] = ["client", "session"];

/** SPEC 8: `client_token` TTL. */
export const TOKEN_TTL_MS = 5 * 60 * 1000;

const VERSION = "mt1";
const MAC_BYTES = 32;
const MAX_TOKEN_LENGTH = 1024;

interface TokenPayload {
  /** Session id. */
  s: string;
  /** Purpose. */
  p: TokenPurpose;
  /** Expiry, epoch ms. */
  e: number;
  /** Nonce. */
  n: string;
}

export interface MintedToken {
  token: string;
  /** Epoch ms. */
  expiresAt: number;
}

export type TokenCheck =
  | { ok: true; sessionId: string; purpose: TokenPurpose; expiresAt: number }
  | { ok: false; code: "AVTR_AUTH_EXPIRED_TOKEN" | "AVTR_AUTH_INVALID_KEY" };

/**
 * Mints a token for `sessionId` and `purpose`, valid for 5 minutes from `deps.now()`.
 * Throws 503 `AVTR_SESSION_STATE_UNAVAILABLE` when the token secret is unusable.
 */
export function mintToken(
  deps: AppDeps,
  sessionId: string,
  purpose: TokenPurpose,
): MintedToken {
  const secret = requireTokenSecret(deps);
  const expiresAt = deps.now() + TOKEN_TTL_MS;
  const payload: TokenPayload = {
    s: sessionId,
    p: purpose,
    e: expiresAt,
    n: base64url(crypto.getRandomValues(new Uint8Array(12))),
  };
  const body = `${VERSION}.${
    base64url(new TextEncoder().encode(JSON.stringify(payload)))
  }`;
  return { token: `${body}.${base64url(mac(secret, body))}`, expiresAt };
}

function parsePayload(b64: string): TokenPayload | null {
  try {
    const v = JSON.parse(new TextDecoder().decode(fromBase64url(b64)));
    if (
      v && typeof v.s === "string" && (v.p === "client" || v.p === "session") &&
      Number.isSafeInteger(v.e) && typeof v.n === "string"
    ) {
      return v as TokenPayload;
    }
  } catch {
    // Falls through to null: a malformed payload is an invalid token.
  }
  return null;
}

/**
 * Verifies `token` in constant time: signature, then purpose (one of `purposes`), then
 * session (when `sessionId` is given), then expiry. Expired → `AVTR_AUTH_EXPIRED_TOKEN`;
 * anything else wrong (missing, malformed, forged, wrong purpose or session, or no
 * usable secret) → `AVTR_AUTH_INVALID_KEY`.
 */
export function verifyToken(
  deps: AppDeps,
  token: string | null | undefined,
  options: { sessionId?: string; purposes: readonly TokenPurpose[] },
): TokenCheck {
  const invalid = { ok: false, code: "AVTR_AUTH_INVALID_KEY" } as const;
  const secret = deps.config.tokenSecret;
  if (!secret || typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) {
    return invalid;
  }
  const parts = token.split(".");
  if (
    parts.length !== 3 || parts[0] !== VERSION ||
    !/^[A-Za-z0-9_-]+$/.test(parts[1]) || !/^[A-Za-z0-9_-]+$/.test(parts[2])
  ) {
    return invalid;
  }
  let given: Uint8Array;
  try {
    given = fromBase64url(parts[2]);
  } catch {
    return invalid;
  }
  const expected = mac(secret, `${parts[0]}.${parts[1]}`);
  if (given.length !== MAC_BYTES || !timingSafeEqual(given, expected)) {
    return invalid;
  }
  const payload = parsePayload(parts[1]);
  if (!payload || !options.purposes.includes(payload.p)) return invalid;
  if (options.sessionId !== undefined && payload.s !== options.sessionId) {
    return invalid;
  }
  if (deps.now() >= payload.e) {
    return { ok: false, code: "AVTR_AUTH_EXPIRED_TOKEN" };
  }
  return {
    ok: true,
    sessionId: payload.s,
    purpose: payload.p,
    expiresAt: payload.e,
  };
}

/** Verifies a token presented on the media socket of `sessionId` (either purpose). */
export function verifyMediaToken(
  deps: AppDeps,
  token: string | null | undefined,
  sessionId: string,
):
  | { ok: true }
  | { ok: false; code: "AVTR_AUTH_EXPIRED_TOKEN" | "AVTR_AUTH_INVALID_KEY" } {
  const r = verifyToken(deps, token, { sessionId, purposes: MEDIA_PURPOSES });
  return r.ok ? { ok: true } : r;
}
