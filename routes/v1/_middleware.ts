/**
 * Runs for every `/v1/` request, unmatched paths included: counts it against its rate
 * limit (per credential, or per client address when none was sent) and puts the
 * `X-RateLimit-*` headers on whatever answer follows, errors included.
 */
import { credentialFrom } from "../../lib/auth.ts";
import { ApiError } from "../../lib/errors.ts";
import type { Ctx } from "../../lib/http.ts";
import { rateLimiterOf, rateLimitSubject } from "../../lib/rate_limit.ts";

export async function handler(ctx: Ctx): Promise<Response> {
  const decision = rateLimiterOf(ctx.deps).take(
    rateLimitSubject(credentialFrom(ctx.req), ctx.remoteAddr),
  );
  const h = ctx.state.headers;
  h.set("x-ratelimit-limit", String(decision.limit));
  h.set("x-ratelimit-remaining", String(decision.remaining));
  h.set("x-ratelimit-reset", String(decision.reset));
  if (!decision.allowed) {
    throw new ApiError(
      "AVTR_RATE_LIMIT_EXCEEDED",
      "Too many requests in the current rate-limit window",
      { retryAfter: decision.retryAfter },
    );
  }
  return await ctx.next();
}
