/**
 * The browser → session direction of a live session's socket (./live.ts): each frame
 * counted against the socket's byte bound as it arrives, then judged by the socket's
 * gate (./gate.ts) before any use, then microphone audio to the engine (and, while the
 * user is heard speaking, the avatar listens: ./listening.ts), typed turns and
 * interrupts to the turns, pings answered, the browser's sample rate kept, and WebRTC
 * signalling handed to the session's SFU side.
 */
import type { Logger } from "../log.ts";
import type { EngineConnection } from "../ports/providers.ts";
import type { AudioCodec, RenderSession } from "../ports/render.ts";
import { UserVoice } from "./listening.ts";
import type { Turns } from "./turns.ts";
import { closeSocket } from "./downlink.ts";
import type { FrameGate } from "./gate.ts";
import {
  type ClientMessage,
  CLOSE_FLOODING,
  CLOSE_TOO_BIG,
  DEFAULT_BROWSER_SAMPLE_RATE,
  pcmFromBytes,
  type ServerMessage,
  type SocketErrorCode,
} from "./protocol.ts";
import type { ClientStats } from "./viewer_stats.ts";

/** The counters the uplink keeps (part of the session's `LiveStats`). */
export interface UplinkStats {
  framesReceived: number;
  invalidMessages: number;
  oversizeFrames: number;
  framesThrottled: number;
}

/** A WebRTC signalling message from the browser. */
export type WebrtcMessage = Extract<
  ClientMessage,
  { type: "webrtc.answer" | "webrtc.candidate" | "webrtc.unsupported" }
>;

/** What the uplink reaches of its live session. */
export interface UplinkSession {
  readonly sessionId: string;
  readonly log: Logger;
  readonly stats: UplinkStats;
  readonly turns: Turns;
  engine(): EngineConnection | null;
  /** The session's renderer, once it runs. */
  render(): RenderSession | null;
  send(msg: ServerMessage): void;
  sendError(code: SocketErrorCode, fatal: boolean): void;
  /** WebRTC signalling: the session's SFU side decides what it means. */
  webrtc(msg: WebrtcMessage): void;
  /** What the viewer experiences (`client.stats`); false: too soon, dropped. */
  viewerStats(msg: ClientStats): boolean;
  /** The audio codec the player decodes (`media.config`). */
  audioCodec(audio: AudioCodec): void;
}

/** The frames one live session's browser sends, whichever socket carries them. */
export class Uplink {
  /** The browser's microphone rate (`audio.config`); kept across takeovers. */
  #rate = DEFAULT_BROWSER_SAMPLE_RATE;
  readonly #voice: UserVoice;

  constructor(private readonly session: UplinkSession) {
    this.#voice = new UserVoice((on) => session.render()?.listen(on));
  }

  /**
   * A frame of `ws` as it arrives, before anything else (whether `ws` is still the
   * session's socket or not): false when the socket is past its byte bound, which
   * closes it with 1008 and drops the frame.
   */
  arrive(ws: WebSocket, gate: FrameGate, data: unknown): boolean {
    if (gate.arrive(data)) return true;
    if (ws.readyState === WebSocket.OPEN) {
      this.session.log.warn("media socket closed for sending too fast", {
        session_id: this.session.sessionId,
      });
      closeSocket(ws, CLOSE_FLOODING, "sending too fast");
    }
    return false;
  }

  /** One frame of the current socket `ws`, judged by its `gate`. */
  frame(ws: WebSocket, gate: FrameGate, data: unknown): void | Promise<void> {
    const { stats } = this.session;
    stats.framesReceived++;
    const verdict = gate.check(data, this.#rate);
    switch (verdict.kind) {
      case "message":
        // A cut is async (the renderer may be remote): returned, so it stays contained.
        return this.#message(verdict.message);
      case "audio": {
        const pcm = pcmFromBytes(verdict.bytes);
        this.session.engine()?.sendUserAudio(pcm, this.#rate);
        this.#voice.push(pcm, this.#rate);
        return;
      }
      case "drop":
        stats.framesThrottled++;
        return;
      case "refuse":
        stats.invalidMessages++;
        if (verdict.oversize) stats.oversizeFrames++;
        if (verdict.throttled) stats.framesThrottled++;
        if (verdict.answer) this.session.sendError("invalid_message", false);
        return;
      case "close":
        stats.oversizeFrames++;
        this.session.log.warn("media socket closed for oversize frames", {
          session_id: this.session.sessionId,
        });
        closeSocket(ws, CLOSE_TOO_BIG, "frame too big");
    }
  }

  /** A message the socket may not send on this session: refused, nothing else. */
  invalid(): void {
    this.session.stats.invalidMessages++;
    this.session.sendError("invalid_message", false);
  }

  #message(msg: ClientMessage): void | Promise<void> {
    switch (msg.type) {
      case "ping":
        this.session.send({ type: "pong" });
        break;
      case "audio.config":
        this.#rate = msg.sample_rate;
        break;
      case "text": {
        const engine = this.session.engine();
        if (engine?.textTurns === false) {
          // The engine has no typed turns (vendor_b): refused, the session goes on.
          this.invalid();
          break;
        }
        this.session.turns.userTranscript(msg.text, true);
        engine?.sendText(msg.text);
        break;
      }
      case "interrupt":
        return this.session.turns.interrupt();
      case "webrtc.unsupported":
      case "webrtc.answer":
      case "webrtc.candidate":
        this.session.webrtc(msg);
        break;
      case "client.stats":
        // More than one a second is dropped, uncounted (DECISIONS 6).
        this.session.viewerStats(msg);
        break;
      case "media.config":
        this.session.audioCodec(msg.audio);
        break;
    }
  }
}
