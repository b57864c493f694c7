/**
 * The transport of a new session (DECISIONS 11): which one a create gets, and its SFU
 * mountpoint, with the `AVTR_SFU_*` errors of a failure.
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import type { Transport } from "../api/schemas.ts";
import {
  markSfuFailing,
  openMountpoint,
  SfuError,
  sfuHealthy,
} from "../sfu/mod.ts";

/**
 * The transport a create gets (SPEC 2.2, DECISIONS 11): `webrtc_sfu` needs `SFU_URL`
 * and the built-in renderer (else 400 `AVTR_SFU_NOT_CONFIGURED`, never a fall back);
 * `auto` picks `webrtc_sfu` when that holds and the SFU answered its last health probe,
 * else `websocket_fmp4`.
 */
export async function resolveTransport(
  deps: AppDeps,
  requested: Transport,
): Promise<Exclude<Transport, "auto">> {
  // A render worker has no RTP output (lib/ports/render.ts publishRtp): no SFU path.
  const usable = deps.sfu !== null && !deps.config.renderWorkerUrl;
  if (requested === "webrtc_sfu") {
    if (!usable) {
      throw new ApiError(
        "AVTR_SFU_NOT_CONFIGURED",
        "transport webrtc_sfu is not available on this deployment",
        { param: "transport" },
      );
    }
    return "webrtc_sfu";
  }
  if (requested === "auto" && usable && await sfuHealthy(deps)) {
    return "webrtc_sfu";
  }
  return "websocket_fmp4";
}

/** The `AVTR_SFU_*` error for an SFU failure during create. */
export function sfuCreateError(err: unknown): ApiError {
  const kind = err instanceof SfuError ? err.kind : "connection";
  switch (kind) {
    case "full":
      return new ApiError(
        "AVTR_SFU_ROOM_FULL",
        "The realtime SFU has no room for another session",
        { cause: err },
      );
    case "negotiation":
      return new ApiError(
        "AVTR_SFU_NEGOTIATION_FAILED",
        "The realtime SFU refused the session's mountpoint",
        { cause: err },
      );
    default:
      return new ApiError(
        "AVTR_SFU_CONNECTION_FAILED",
        "The realtime SFU could not be reached",
        { cause: err },
      );
  }
}

/**
 * Opens the session's SFU mountpoint. A requested `webrtc_sfu` fails with an
 * `AVTR_SFU_*` code; an `auto` that picked the SFU falls back to `websocket_fmp4`.
 */
export async function openSessionMountpoint(
  deps: AppDeps,
  sessionId: string,
  requested: Transport,
  signal: AbortSignal,
): Promise<Exclude<Transport, "auto">> {
  try {
    await openMountpoint(deps, sessionId, signal);
    return "webrtc_sfu";
  } catch (err) {
    if (!(err instanceof SfuError) && !signal.aborted) throw err;
    if (!(err instanceof SfuError) || err.kind === "connection") {
      markSfuFailing(deps);
    }
    if (requested === "auto") {
      deps.log.warn("sfu: mountpoint failed; auto uses websocket_fmp4", {
        session_id: sessionId,
        err,
      });
      return "websocket_fmp4";
    }
    throw sfuCreateError(err);
  }
}
