import { ApiError } from "../lib/errors.ts";
import type { Ctx } from "../lib/api/http.ts";
import { safeEqual } from "../lib/auth/authenticate.ts";

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
    if (!token || !m || !safeEqual(m[1], token)) {
      throw new ApiError("AVTR_NOT_FOUND", "No route matches this path");
    }
    const { body, contentType } = await ctx.deps.metrics.expose();
    return new Response(body, {
      headers: { "content-type": contentType, "cache-control": "no-store" },
    });
  },
};
