/**
 * The media socket's protocol as the browser client speaks it (docs/media-protocol.md):
 * the socket URL and the media token it carries, the server's text messages decoded into
 * typed ones, and the ping/pong keepalive that notices a socket that died without closing.
 */
import type {
  AvatarPlayerOptions,
  CaptionDetail,
  FreshToken,
} from "./player_types.ts";
import type { SocketCandidate } from "./webrtc.ts";

const TOKEN_MARGIN_MS = 10_000;
const PING_EVERY_MS = 15_000;
const PONG_WITHIN_MS = 10_000;

/** A server text message the client acts on. */

/** The close code of a socket whose session a newer socket took over (DECISIONS 6). */
export const CLOSE_TAKEN_OVER = 4000;

export type ServerMessage =
  | { type: "session.state"; status: string }
  | { type: "media.init"; mime: string; alpha: "stacked" | null }
  | { type: "turn.start"; turn_id: string; role: "user" | "avatar" }
  | { type: "turn.end"; turn_id: string }
  /** `media_time_ms` null when unstamped; `heard` false for text cut by an interrupt. */
  | ({ type: "transcript" } & CaptionDetail)
  | {
    type: "error";
    code: string;
    fatal: boolean;
    /** `invalid_session`: the session is over; `session_already_active`: another socket has it. */
    stop: "session_over" | "taken_over" | null;
  }
  | { type: "session.ended"; status: string; reason: string | null }
  | {
    type: "avatar.speaking";
    speaking: boolean;
    turn_id: string;
    media_time_ms: number;
  }
  | { type: "turn.interrupted"; turn_id: string; played_ms: number }
  | { type: "pong" }
  | { type: "webrtc.offer"; sdp: string; alpha: "stacked" | null }
  | { type: "webrtc.candidate"; candidate: SocketCandidate | null };

/** A finite, non-negative number, or null. */
function ms(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

/** `wss://…/v1/sessions/{id}/ws?token=…` for a player's session and a token. */
export function mediaSocketUrl(
  target: Pick<AvatarPlayerOptions, "wsBaseUrl" | "sessionId">,
  token: string,
): string {
  const base = target.wsBaseUrl.replace(/\/+$/, "");
  return `${base}/v1/sessions/${encodeURIComponent(target.sessionId)}` +
    `/ws?token=${encodeURIComponent(token)}`;
}

/** The media token the socket URL carries, and how to get a fresh one. */
export class MediaToken {
  #value: string;
  #expiresAt: number | undefined;

  /** `fetchFresh` asks the customer backend for a new token (the client-token route). */
  constructor(
    value: string,
    expiresAt: number | undefined,
    private readonly now: () => number,
    private readonly fetchFresh: () => Promise<FreshToken>,
  ) {
    this.#value = value;
    this.#expiresAt = expiresAt;
  }

  get value(): string {
    return this.#value;
  }

  /** Whether the token is expired or expires within 10 s (so refresh before use). */
  expired(): boolean {
    return this.#expiresAt !== undefined &&
      this.#expiresAt - this.now() < TOKEN_MARGIN_MS;
  }

  /** Replaces the token with a fresh one. */
  async refresh(): Promise<void> {
    const fresh = await this.fetchFresh();
    this.#value = fresh.client_token;
    this.#expiresAt = fresh.expires_at;
  }
}

/** Decodes a server text frame; null for malformed JSON and message types it ignores. */
export function decodeServerMessage(data: string): ServerMessage | null {
  let msg: Record<string, unknown>;
  try {
    msg = JSON.parse(data);
  } catch {
    return null;
  }
  switch (msg.type) {
    case "session.state":
      return { type: "session.state", status: String(msg.status) };
    case "media.init":
      return {
        type: "media.init",
        mime: String(msg.mime),
        alpha: msg.alpha === "stacked" ? "stacked" : null,
      };
    case "turn.start":
      return {
        type: "turn.start",
        turn_id: String(msg.turn_id),
        role: msg.role === "user" ? "user" : "avatar",
      };
    case "turn.end":
      return { type: "turn.end", turn_id: String(msg.turn_id) };
    case "transcript":
      return {
        type: "transcript",
        turn_id: String(msg.turn_id),
        role: msg.role === "user" ? "user" : "avatar",
        text: String(msg.text),
        final: msg.final === true,
        media_time_ms: ms(msg.media_time_ms),
        heard: msg.heard !== false,
      };
    case "error":
      return {
        type: "error",
        code: String(msg.code),
        fatal: msg.fatal === true,
        stop: msg.code === "invalid_session"
          ? "session_over"
          : msg.code === "session_already_active"
          ? "taken_over"
          : null,
      };
    case "session.ended":
      return {
        type: "session.ended",
        status: String(msg.status),
        reason: typeof msg.reason === "string" ? msg.reason : null,
      };
    case "avatar.speaking": {
      const at = ms(msg.media_time_ms);
      if (typeof msg.speaking !== "boolean" || at === null) return null;
      return {
        type: "avatar.speaking",
        speaking: msg.speaking,
        turn_id: String(msg.turn_id),
        media_time_ms: at,
      };
    }
    case "turn.interrupted": {
      const played = ms(msg.played_ms);
      if (played === null) return null;
      return {
        type: "turn.interrupted",
        turn_id: String(msg.turn_id),
        played_ms: played,
      };
    }
    case "pong":
      return { type: "pong" };
    case "webrtc.offer":
      return typeof msg.sdp === "string"
        ? {
          type: "webrtc.offer",
          sdp: msg.sdp,
          alpha: msg.alpha === "stacked" ? "stacked" : null,
        }
        : null;
    case "webrtc.candidate": {
      const c = msg.candidate as Record<string, unknown> | null;
      if (c === null) return { type: "webrtc.candidate", candidate: null };
      if (typeof c !== "object" || typeof c.candidate !== "string") return null;
      return {
        type: "webrtc.candidate",
        candidate: {
          candidate: c.candidate,
          sdpMid: typeof c.sdpMid === "string" ? c.sdpMid : null,
          sdpMLineIndex: typeof c.sdpMLineIndex === "number"
            ? c.sdpMLineIndex
            : null,
        },
      };
    }
  }
  return null;
}

/**
 * When to ping the socket and when a missing pong means it is dead: a ping every 15 s
 * (and on wake-ups), and a socket whose pong is over 10 s late counts as gone.
 */
export class Keepalive {
  #lastPing = 0;
  #pongDeadline = 0;

  constructor(private readonly now: () => number) {}

  /** A socket opened: no ping outstanding, the ping clock restarts. */
  opened(): void {
    this.#pongDeadline = 0;
    this.#lastPing = this.now();
  }

  /** A ping goes out now. */
  pinged(): void {
    this.#lastPing = this.now();
    if (!this.#pongDeadline) {
      this.#pongDeadline = this.#lastPing + PONG_WITHIN_MS;
    }
  }

  /** A pong came back. */
  ponged(): void {
    this.#pongDeadline = 0;
  }

  /**
   * What the periodic check calls for: `dead` when there is a socket and its pong is
   * overdue, else `ping` when one is due, else null.
   */
  check(hasSocket: boolean): "dead" | "ping" | null {
    const now = this.now();
    if (hasSocket && this.#pongDeadline && now > this.#pongDeadline) {
      return "dead";
    }
    return now - this.#lastPing >= PING_EVERY_MS ? "ping" : null;
  }
}
