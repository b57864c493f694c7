import type { Ctx } from "../lib/http.ts";

/** Baseline headers on every response. Pages add their own CSP in the console layout. */
export async function handler(ctx: Ctx): Promise<Response> {
  const res = await ctx.next();
  ctx.state.headers.set("x-content-type-options", "nosniff");
  ctx.state.headers.set("referrer-policy", "no-referrer");
  return res;
}
