/**
 * Runs for every `/v1/` request, unmatched paths included, and counts it against one
 * rate-limit window (DECISIONS 9, lib/api/rate_limit.ts), whose `X-RateLimit-*` headers
 * go on whatever answer follows, errors included:
 *
 * - a credential that verifies is counted against its principal (key id, operator key,
 *   IdP subject, media token's session) by `authenticate` as soon as it verifies;
 * - everything else (no credential, a credential that does not verify, a 404 or 405
 *   that no credential was verified for) is counted against the client address (IPv6
 *   by /64), so rotating made-up credentials or paths buys nothing. Once the address's
 *   window is spent, its unverified requests are answered 429 (in place of the 401, 404
 *   or 405, which cost no work beyond the failed verification); a credential that
 *   verifies still gets through, and so does a media token (its own window).
 */
import {
  requestCredential,
  verifyCredential,
} from "../../lib/auth/authenticate.ts";
import { ApiError } from "../../lib/errors.ts";
import type { Ctx } from "../../lib/api/http.ts";
import { chargeUnverified } from "../../lib/api/rate_charge.ts";
import { rateLimiterOf } from "../../lib/api/rate_limit.ts";

export async function handler(ctx: Ctx): Promise<Response> {
  ctx.state.rateLimiter = rateLimiterOf(ctx.deps);
  const credential = requestCredential(ctx);
  let res: Response | undefined;
  let thrown: unknown;
  try {
    res = await ctx.next();
  } catch (err) {
    thrown = err;
  }
  if (!ctx.state.rateCharged) {
    // No route tried the credential (an unknown path, a wrong method): whether it
    // verifies decides which window counts the request.
    const refused = credential.value !== null && !ctx.state.authTried
      ? await verifyQuietly(ctx) ?? chargeUnverified(ctx)
      : chargeUnverified(ctx);
    if (refused !== null) {
      await res?.body?.cancel();
      throw refused;
    }
  }
  if (res === undefined) throw thrown;
  return res;
}

/**
 * Verifies the request's credential for its rate-limit window only: counts it against
 * the principal when it verifies, and returns the 429 when that window is spent; a
 * credential that does not verify changes nothing (null).
 */
async function verifyQuietly(ctx: Ctx): Promise<ApiError | null> {
  try {
    await verifyCredential(ctx);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.code === "AVTR_RATE_LIMIT_EXCEEDED") return err;
  }
  return null;
}
