import { type Ctx, json } from "../lib/api/http.ts";
import { kvTry } from "../lib/kv/store.ts";

export const handler = {
  /** Ready when KV answers and the token secret is usable (DECISIONS 1). */
  async GET(ctx: Ctx): Promise<Response> {
    const checks: Record<string, "ok" | "failing"> = {
      kv: "ok",
      token_secret: "ok",
    };
    try {
      await kvTry(ctx.deps.kv.get(["readyz"]), 2000);
    } catch {
      checks.kv = "failing";
    }
    if (!ctx.deps.config.tokenSecret) checks.token_secret = "failing";
    const ready = Object.values(checks).every((v) => v === "ok");
    return json(
      { status: ready ? "ready" : "not_ready", checks },
      ready ? 200 : 503,
    );
  },
};
