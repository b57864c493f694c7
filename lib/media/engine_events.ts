/**
 * The conversation engine's callbacks for one live session (lib/media/live.ts): its
 * responses, audio and transcripts go to the session's turns (./turns.ts), its errors
 * and closes to the socket and the session's end. Each callback is contained: a throw in
 * one ends the session as a provider failure (./contain.ts).
 */
import type { EndReason } from "../api/schemas.ts";
import type { Logger } from "../log.ts";
import type { EngineEvents } from "../ports/providers.ts";
import { containAll, type FailureSource } from "./contain.ts";
import type { SocketErrorCode } from "./protocol.ts";
import type { Turns } from "./turns.ts";

/** What the engine's callbacks need from the live session they belong to. */
export interface EngineEventsHost {
  readonly sessionId: string;
  readonly log: Logger;
  readonly turns: Turns;
  /** Whether the session is closing (a close then is expected). */
  closed(): boolean;
  sendError(code: SocketErrorCode, fatal: boolean): void;
  /** Something ends the session (see `LiveSession.onFailed`). */
  failed(why: string, source: FailureSource, reason: EndReason): void;
  /** A contained handler threw. */
  contained(source: FailureSource): void;
}

/**
 * The engine's callbacks, bound to `host`; `onReady` gets the engine's agent sample
 * rate once it is ready.
 */
export function liveEngineEvents(
  host: EngineEventsHost,
  onReady: (rate: number) => void,
): EngineEvents {
  return containAll(
    host.log,
    "provider",
    "engine event",
    host.contained,
    rawEngineEvents(host, onReady),
  );
}

function rawEngineEvents(
  host: EngineEventsHost,
  onReady: (rate: number) => void,
): EngineEvents {
  const turns = host.turns;
  return {
    onReady: ({ agentSampleRate }) => onReady(agentSampleRate),
    onResponseStart: (responseId) => turns.responseStart(responseId),
    onAgentAudio: (pcm, rate) => turns.agentAudio(pcm, rate),
    onResponseEnd: (responseId) => turns.responseEnd(responseId),
    onTranscript: ({ role, text, final, audioMs, correction }) =>
      correction
        ? turns.correction(text)
        : turns.transcript(role, text, final, audioMs),
    onError: ({ code, fatal, message }) => {
      host.log.warn("engine error", {
        session_id: host.sessionId,
        code,
        fatal,
        message,
      });
      host.sendError(code, false);
      if (fatal) {
        host.failed(
          `conversation engine failed (${code})`,
          "provider",
          "provider_failed",
        );
      }
    },
    onBargeIn: () => turns.bargeIn(),
    onResponseCancel: (responseId) => turns.cancel(responseId),
    onClose: ({ clean, reason, code }) => {
      if (clean || host.closed()) return;
      host.log.warn("engine closed", {
        session_id: host.sessionId,
        reason,
        code,
      });
      if (code === 1000) {
        // A normal close while active: the engine ended the conversation.
        host.failed(
          "the conversation engine ended the conversation",
          "provider",
          "provider_ended",
        );
      } else {
        host.failed(
          "conversation engine disconnected",
          "provider",
          "provider_failed",
        );
      }
    },
  };
}
