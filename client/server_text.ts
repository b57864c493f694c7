/**
 * The media socket's text messages (docs/media-protocol.md), decoded and routed for the
 * browser client (client/browser.ts): the session's state and end, errors (with
 * whether they stop the player redialling), pongs, and the rest (turns, transcripts,
 * speech and SFU signalling) to the player's handlers.
 */
import { decodeServerMessage, type ServerMessage } from "./protocol.ts";

/** What the player does with each kind of message. */
export interface ServerTextHost {
  state(status: string): void;
  /** Another socket took the session over. */
  takenOver(): void;
  /** `stop`: the session is over, or this browser cannot play it: no redial. */
  error(code: string, fatal: boolean, stop: boolean): void;
  /** The session is over: its `session.ended` should follow shortly. */
  endedSoon(): void;
  ended(status: string, reason: string | null): void;
  pong(): void;
  other(msg: ServerMessage): void;
}

/** Decodes one text frame and hands it to `h` (an undecodable one is ignored). */
export function routeServerText(data: string, h: ServerTextHost): void {
  const msg = decodeServerMessage(data);
  switch (msg?.type) {
    case "session.state":
      h.state(msg.status);
      break;
    case "error":
      if (msg.stop === "taken_over") {
        h.takenOver();
        break;
      }
      // The session is over, or this browser cannot play it (a fatal
      // `unsupported_media`): do not reconnect.
      h.error(msg.code, msg.fatal, !!msg.stop || msg.fatal);
      if (msg.stop === "session_over") h.endedSoon();
      break;
    case "session.ended":
      h.ended(msg.status, msg.reason);
      break;
    case "pong":
      h.pong();
      break;
    default:
      if (msg) h.other(msg);
  }
}
