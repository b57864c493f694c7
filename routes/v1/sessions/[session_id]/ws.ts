import { ApiError } from "../../../../lib/errors.ts";
import type { Ctx } from "../../../../lib/http.ts";
import { mediaHubOf } from "../../../../lib/media/service.ts";
import { readSession } from "../../../../lib/sessions.ts";
import { verifyMediaToken } from "../../../../lib/tokens.ts";

/**
 * The media WebSocket (SPEC 4.6, DECISIONS 6): every token fault is answered with HTTP 401
 * and a flat error body before the upgrade.
 */
export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const sessionId = ctx.params.session_id;
    const check = verifyMediaToken(
      ctx.deps,
      ctx.url.searchParams.get("token"),
      sessionId,
    );
    if (!check.ok) {
      throw new ApiError(
        check.code,
        check.code === "AVTR_AUTH_EXPIRED_TOKEN"
          ? "The media token has expired"
          : "The media token is not valid for this session",
      );
    }
    if ((ctx.req.headers.get("upgrade") ?? "").toLowerCase() !== "websocket") {
      throw new ApiError(
        "AVTR_REQUEST_INVALID",
        "This endpoint takes a WebSocket upgrade",
      );
    }
    const session = await readSession(ctx.deps, sessionId);
    if (!session) {
      throw new ApiError("AVTR_SESSION_NOT_FOUND", "Session not found");
    }
    const { socket, response } = Deno.upgradeWebSocket(ctx.req, {
      idleTimeout: 60,
    });
    void mediaHubOf(ctx.deps).accept(socket, session);
    return response;
  },
};
