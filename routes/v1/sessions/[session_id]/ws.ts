import { ApiError } from "../../../../lib/errors.ts";
import { type Ctx, upgradeWebSocket } from "../../../../lib/api/http.ts";
import { holderSocketUrl, relaySocket } from "../../../../lib/media/relay.ts";
import {
  checkRelayMark,
  RELAY_HEADER,
  relaySecrets,
} from "../../../../lib/media/relay_mark.ts";
import { mediaHubOf } from "../../../../lib/media/service.ts";
import { isTerminal, readSession } from "../../../../lib/sessions.ts";
import { verifyMediaToken } from "../../../../lib/auth/tokens.ts";
import { chargeVerified } from "../../../../lib/api/rate_charge.ts";
import { mediaSubject } from "../../../../lib/api/rate_subjects.ts";

/**
 * The media WebSocket (SPEC 4.6, DECISIONS 6): every token fault is answered with HTTP 401
 * and a flat error body before the upgrade. A socket for a session another instance
 * holds is relayed to that instance. A reconnect past the session's takeover rate (429) and
 * a socket for a `created` session without a free render slot (503) are refused before
 * the upgrade too. A socket that already came through a relay (its signed mark) is never
 * relayed again: an instance that does not hold it answers it itself.
 */
export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const sessionId = ctx.params.session_id;
    const token = ctx.url.searchParams.get("token");
    const check = verifyMediaToken(ctx.deps, token, sessionId);
    if (!check.ok) {
      throw new ApiError(
        check.code,
        check.code === "AVTR_AUTH_EXPIRED_TOKEN"
          ? "The media token has expired"
          : "The media token is not valid for this session",
      );
    }
    // A verified token counts against its session's window, never its address's.
    chargeVerified(ctx, mediaSubject(sessionId));
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
    // A mark names the holder the relay meant to reach, whoever this instance is.
    const mark = checkRelayMark(
      relaySecrets(ctx.deps.config),
      ctx.req.headers.get(RELAY_HEADER),
      session.owner,
      sessionId,
      ctx.deps.now(),
    );
    if (mark === "invalid") {
      throw new ApiError(
        "AVTR_REQUEST_INVALID",
        "The relay mark of this socket does not verify",
      );
    }
    if (
      mark === "absent" && session.owner !== ctx.deps.instanceId &&
      !isTerminal(session.status)
    ) {
      const upstream = await holderSocketUrl(
        ctx.deps,
        session.owner,
        sessionId,
        token!,
      );
      if (upstream) {
        const { socket, response } = upgradeWebSocket(ctx.req, {
          idleTimeout: 60,
        });
        relaySocket(ctx.deps, socket, upstream, sessionId, session.owner);
        return response;
      }
      // The holder is gone: the hub answers with the fatal invalid_session.
    }
    const hub = mediaHubOf(ctx.deps);
    if (session.owner === ctx.deps.instanceId && !isTerminal(session.status)) {
      // Takeover rate and render capacity are answered before the upgrade.
      hub.admitSocket(session);
    }
    let upgrade: Deno.WebSocketUpgrade;
    try {
      upgrade = upgradeWebSocket(ctx.req, { idleTimeout: 60 });
    } catch (err) {
      hub.notOpened(session);
      throw err;
    }
    const { socket, response } = upgrade;
    hub.acceptSocket(socket, session);
    return response;
  },
};
