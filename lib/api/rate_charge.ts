/**
 * Charging one `/v1/` request to a rate-limit window (DECISIONS 9): a verified principal
 * by `authenticate` (`chargeVerified`), anything else by the `/v1/` middleware against
 * the client address (`chargeUnverified`). Each sets the `X-RateLimit-*` headers of
 * the window it charged; a request is charged once.
 */
import { ApiError } from "../errors.ts";
import type { Ctx } from "./http.ts";
import type { RateLimitDecision } from "./rate_limit.ts";

/** Puts a decision's `X-RateLimit-*` headers on the request's answer. */
export function setRateHeaders(ctx: Ctx, d: RateLimitDecision): void {
  const h = ctx.state.headers;
  h.set("x-ratelimit-limit", String(d.limit));
  h.set("x-ratelimit-remaining", String(d.remaining));
  h.set("x-ratelimit-reset", String(d.reset));
}

/** The 429 of a spent window, `Retry-After` = `retry_after` = seconds to its end. */
export function rateLimitExceeded(d: RateLimitDecision): ApiError {
  return new ApiError(
    "AVTR_RATE_LIMIT_EXCEEDED",
    "Too many requests in the current rate-limit window",
    { retryAfter: d.retryAfter },
  );
}

/**
 * Counts the request against a verified principal's window (`subject`, from
 * ./rate_subjects.ts or `RateLimiter.idpSubject`), sets the headers, and throws 429 when
 * the window is spent. Does nothing outside the `/v1/` middleware (no limiter on the
 * request) or when the request was counted already.
 */
export function chargeVerified(ctx: Ctx, subject: string): void {
  const limiter = ctx.state.rateLimiter;
  if (limiter === undefined || ctx.state.rateCharged) return;
  ctx.state.rateCharged = true;
  const d = limiter.take(subject);
  setRateHeaders(ctx, d);
  if (!d.allowed) {
    ctx.deps.metrics.refused.inc({ kind: "principal" });
    throw rateLimitExceeded(d);
  }
}

/**
 * Counts a request no verified principal was counted for against its client address
 * (whatever it asked for and however it ended), sets the headers, and returns the 429
 * to answer instead when the address's window is spent, else null.
 */
export function chargeUnverified(ctx: Ctx): ApiError | null {
  const limiter = ctx.state.rateLimiter;
  if (limiter === undefined || ctx.state.rateCharged) return null;
  ctx.state.rateCharged = true;
  const d = limiter.take(limiter.addressSubject(ctx.remoteAddr));
  setRateHeaders(ctx, d);
  if (d.allowed) return null;
  ctx.deps.metrics.refused.inc({ kind: "address" });
  return rateLimitExceeded(d);
}
