/**
 * The shared `TOKEN_SECRET` and what is derived from it: HMAC-SHA256 under it (media
 * tokens, lib/auth/tokens.ts) and keys derived for other uses (the rate limiter's
 * subjects, idempotency fingerprints), each in its own domain.
 */
import { createHmac } from "node:crypto";
import type { AppDeps } from "./deps.ts";
import { ApiError } from "./errors.ts";

/** HMAC-SHA256 of `data` under `secret`. */
export function mac(secret: Uint8Array, data: string): Uint8Array {
  return new Uint8Array(createHmac("sha256", secret).update(data).digest());
}

/** The token secret, or 503 `AVTR_SESSION_STATE_UNAVAILABLE` when it is unusable. */
export function requireTokenSecret(deps: AppDeps): Uint8Array {
  const secret = deps.config.tokenSecret;
  if (!secret) {
    throw new ApiError(
      "AVTR_SESSION_STATE_UNAVAILABLE",
      "Media tokens cannot be issued right now",
      { retryAfter: 60 },
    );
  }
  return secret;
}

/**
 * A key derived from the token secret for another use (`label` separates domains), so
 * that e.g. an idempotency fingerprint can never be replayed as a token MAC.
 */
export function deriveKey(deps: AppDeps, label: string): Uint8Array {
  return mac(requireTokenSecret(deps), `derive:${label}`);
}
