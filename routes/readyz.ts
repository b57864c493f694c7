import { type Ctx, json } from "../lib/api/http.ts";
import { kvTry } from "../lib/kv/store.ts";
import { sfuHealthy } from "../lib/sfu/mod.ts";
import { mediaNodes } from "../lib/nodes/registry.ts";

export const handler = {
  /**
   * Ready when KV answers and the token secret is usable (DECISIONS 1). With `SFU_URL`
   * set, `checks.sfu` reports the SFU too, without deciding readiness: an SFU outage
   * fails `webrtc_sfu` creates, while `websocket_fmp4` sessions still work here. On a
   * control plane, `checks.media_nodes` says whether a live media node is registered,
   * again without deciding readiness (status reads, ends and the console still work).
   * A draining instance answers 503 `{"status": "draining"}`.
   */
  async GET(ctx: Ctx): Promise<Response> {
    const checks: Record<string, "ok" | "failing"> = {
      kv: "ok",
      token_secret: "ok",
    };
    const sfu = ctx.deps.sfu ? sfuHealthy(ctx.deps) : undefined;
    try {
      await kvTry(ctx.deps.kv.get(["readyz"]), 2000);
    } catch {
      checks.kv = "failing";
    }
    if (!ctx.deps.config.tokenSecret) checks.token_secret = "failing";
    const ready = Object.values(checks).every((v) => v === "ok");
    if (ctx.deps.draining) {
      // Shutting down: serves what it holds, takes nothing new (lib/nodes/drain.ts).
      return json({ status: "draining", checks }, 503);
    }
    if (sfu) checks.sfu = await sfu ? "ok" : "failing";
    if (ready && ctx.deps.config.role === "control") {
      checks.media_nodes = (await mediaNodes(ctx.deps)).length > 0
        ? "ok"
        : "failing";
    }
    return json(
      { status: ready ? "ready" : "not_ready", checks },
      ready ? 200 : 503,
    );
  },
};
