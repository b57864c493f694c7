import { ApiError } from "../lib/api/errors.ts";
import type { Ctx } from "../lib/api/http.ts";

/** Constant-time equality of two strings' UTF-8 bytes (a length difference shows). */
function sameToken(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) {
    diff |= x[i] ^ (y[i % (y.length || 1)] ?? 0);
  }
  return diff === 0;
}

export const handler = {
  /**
   * This instance's metrics in Prometheus' text format (DECISIONS 10), only with
   * `METRICS_TOKEN` set and to `Authorization: Bearer <METRICS_TOKEN>`; otherwise the
   * same 404 as any unknown path, so a scanner learns nothing.
   */
  async GET(ctx: Ctx): Promise<Response> {
    const token = ctx.deps.config.metricsToken;
    const auth = ctx.req.headers.get("authorization") ?? "";
    const m = /^Bearer (.+)$/.exec(auth);
    if (!token || !m || !sameToken(m[1], token)) {
      throw new ApiError("AVTR_NOT_FOUND", "No route matches this path");
    }
    const { body, contentType } = await ctx.deps.metrics.expose();
    return new Response(body, {
      headers: { "content-type": contentType, "cache-control": "no-store" },
    });
  },
};
