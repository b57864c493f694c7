/**
 * The gate every browser frame passes before the session uses it (DECISIONS 6), one per
 * socket (a takeover starts a fresh one). First, as a frame arrives, its bytes are
 * counted against the socket's byte bound (`arrive`: past it the socket is closed 1008,
 * whatever the frames are); then, in this order: size (over 64 KiB → refused unread;
 * past `MAX_OVERSIZE_FRAMES` → close 1009), the socket's rate gates, then the schema
 * (text) or the PCM check (binary). Nothing here throws.
 */
import { TokenBucket } from "./bucket.ts";
import {
  type ClientMessage,
  isOversize,
  MAX_FRAME_BYTES,
  MAX_OVERSIZE_FRAMES,
  parseClientMessage,
  pcmBytes,
  utf8Length,
} from "./protocol.ts";

/**
 * Bytes a socket may send, per second and at once, counted as its frames arrive (all of
 * them: oversize, over-rate and malformed ones too). A microphone sends at most 96,000
 * bytes a second (PCM16 at 48 kHz) plus a few small text frames, and the browser client
 * queues at most 256 KiB behind a stalled socket: the bound is ten times the one and
 * thirty-two times the other. Past it the socket is closed with `CLOSE_FLOODING`
 * (1008), so a flood costs the process at most about this many bytes per socket.
 */
export const INBOUND_BYTES_PER_S = 1024 * 1024;
export const INBOUND_BURST_BYTES = 8 * 1024 * 1024;

/** Text frames a socket may send per second, and at once (ping, text, interrupt…). */
export const TEXT_FRAMES_PER_S = 20;
export const TEXT_FRAMES_BURST = 60;
/** Microphone audio a socket may send, in seconds of audio per second, and at once. */
export const MIC_AUDIO_SPEED = 2;
export const MIC_AUDIO_BURST_S = 4;
/** `invalid_message` errors sent back per second, and at once; the rest are only counted. */
export const ERRORS_PER_S = 5;
export const ERRORS_BURST = 20;

/** What to do with one frame. */
export type FrameVerdict =
  | { kind: "message"; message: ClientMessage }
  | { kind: "audio"; bytes: Uint8Array }
  /** Answer `invalid_message` (when `answer`: the error rate allows it). */
  | { kind: "refuse"; answer: boolean; oversize: boolean; throttled: boolean }
  /** Drop quietly (microphone audio over its rate). */
  | { kind: "drop" }
  /** Close the socket with 1009. */
  | { kind: "close" };

/**
 * A frame's size on the wire, at least: binary exactly, text in UTF-8 (a text too long
 * to be anything but oversize counts as its length, without a walk over it).
 */
export function arrivedBytes(data: unknown): number {
  if (typeof data === "string") {
    return data.length > MAX_FRAME_BYTES ? data.length : utf8Length(data);
  }
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
    return data.byteLength;
  }
  return 0;
}

export class FrameGate {
  #oversize = 0;
  #flooded = false;
  readonly #bytes: TokenBucket;
  readonly #text: TokenBucket;
  readonly #mic: TokenBucket;
  readonly #errors: TokenBucket;

  constructor(now: () => number) {
    this.#bytes = new TokenBucket(
      INBOUND_BURST_BYTES,
      INBOUND_BYTES_PER_S,
      now,
    );
    this.#text = new TokenBucket(TEXT_FRAMES_BURST, TEXT_FRAMES_PER_S, now);
    this.#mic = new TokenBucket(MIC_AUDIO_BURST_S, MIC_AUDIO_SPEED, now);
    this.#errors = new TokenBucket(ERRORS_BURST, ERRORS_PER_S, now);
  }

  /**
   * Counts a frame's bytes as it arrives, before anything else looks at it; false once
   * the socket has sent more than the byte bound allows (and for every frame after),
   * when the caller closes it with `CLOSE_FLOODING` and drops the frame.
   */
  arrive(data: unknown): boolean {
    if (this.#flooded) return false;
    if (this.#bytes.take(arrivedBytes(data))) return true;
    this.#flooded = true;
    return false;
  }

  /** Judges one frame (after `arrive`); `browserRate` is the socket's configured microphone rate. */
  check(data: unknown, browserRate: number): FrameVerdict {
    if (isOversize(data)) {
      if (++this.#oversize > MAX_OVERSIZE_FRAMES) return { kind: "close" };
      return this.#refuse({ oversize: true });
    }
    if (typeof data === "string") {
      if (!this.#text.take()) return this.#refuse({ throttled: true });
      const message = parseClientMessage(data);
      return message ? { kind: "message", message } : this.#refuse({});
    }
    const bytes = pcmBytes(data as ArrayBuffer);
    if (!bytes) return this.#refuse({});
    // Faster than real time allows: dropped quietly (a microphone never gets here).
    if (!this.#mic.take(bytes.byteLength / 2 / browserRate)) {
      return { kind: "drop" };
    }
    return { kind: "audio", bytes };
  }

  #refuse(o: { oversize?: boolean; throttled?: boolean }): FrameVerdict {
    return {
      kind: "refuse",
      answer: this.#errors.take(),
      oversize: o.oversize ?? false,
      throttled: o.throttled ?? false,
    };
  }
}
