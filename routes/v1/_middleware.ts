/**
 * Runs for every `/v1/` request, unmatched paths included: counts it against its rate
 * limit (per credential, or per client address when none was sent) and puts the
 * `X-RateLimit-*` headers on whatever answer follows, errors included.
 *
 * Failed authentications have a window of their own per client address: every 401
 * answered counts against it, and once it is spent the address is answered 429 before
 * authentication is attempted, whatever credential it sends, until the window ends. So
 * rotating made-up credentials (each of which gets a fresh window of its own) cannot
 * guess keys without limit.
 */
import { requestCredential } from "../../lib/auth/authenticate.ts";
import { ApiError } from "../../lib/api/errors.ts";
import type { Ctx } from "../../lib/api/http.ts";
import {
  type RateLimitDecision,
  rateLimiterOf,
} from "../../lib/api/rate_limit.ts";

function setRateHeaders(ctx: Ctx, d: RateLimitDecision): void {
  const h = ctx.state.headers;
  h.set("x-ratelimit-limit", String(d.limit));
  h.set("x-ratelimit-remaining", String(d.remaining));
  h.set("x-ratelimit-reset", String(d.reset));
}

function exceeded(d: RateLimitDecision): ApiError {
  return new ApiError(
    "AVTR_RATE_LIMIT_EXCEEDED",
    "Too many requests in the current rate-limit window",
    { retryAfter: d.retryAfter },
  );
}

export async function handler(ctx: Ctx): Promise<Response> {
  const limiter = rateLimiterOf(ctx.deps);
  const spent = limiter.failuresSpent(ctx.remoteAddr);
  if (spent !== null) {
    setRateHeaders(ctx, spent);
    throw exceeded(spent);
  }
  const credential = requestCredential(ctx);
  const decision = limiter.take(
    limiter.subjectOf(credential.value, ctx.remoteAddr, credential.key),
  );
  setRateHeaders(ctx, decision);
  if (!decision.allowed) throw exceeded(decision);

  // A 401 counts against the address; the headers then show whichever window is
  // closer to refusing this client.
  const countFailure = () => {
    const f = limiter.countFailure(ctx.remoteAddr);
    if (f.remaining < decision.remaining) setRateHeaders(ctx, f);
  };
  let res: Response;
  try {
    res = await ctx.next();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) countFailure();
    throw err;
  }
  if (res.status === 401) countFailure();
  return res;
}
