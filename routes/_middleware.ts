import type { Ctx } from "../lib/api/http.ts";

/** Baseline headers on every response. Pages add their own CSP in the console layout. */
export function handler(ctx: Ctx): Promise<Response> {
  // Copied onto the response whatever it is (errors too) by the app, after the chain.
  ctx.state.headers.set("x-content-type-options", "nosniff");
  ctx.state.headers.set("referrer-policy", "no-referrer");
  return ctx.next();
}
