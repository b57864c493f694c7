/**
 * The gate every browser frame passes before the session uses it (DECISIONS 6), one per
 * socket (a takeover starts a fresh one), in this order: size (over 64 KiB → refused
 * unread; past `MAX_OVERSIZE_FRAMES` → close 1009), the socket's rate gates, then the
 * schema (text) or the PCM check (binary). Nothing here throws.
 */
import { TokenBucket } from "./bucket.ts";
import {
  type ClientMessage,
  isOversize,
  MAX_OVERSIZE_FRAMES,
  parseClientMessage,
  pcmBytes,
} from "./protocol.ts";

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

export class FrameGate {
  #oversize = 0;
  readonly #text: TokenBucket;
  readonly #mic: TokenBucket;
  readonly #errors: TokenBucket;

  constructor(now: () => number) {
    this.#text = new TokenBucket(TEXT_FRAMES_BURST, TEXT_FRAMES_PER_S, now);
    this.#mic = new TokenBucket(MIC_AUDIO_BURST_S, MIC_AUDIO_SPEED, now);
    this.#errors = new TokenBucket(ERRORS_BURST, ERRORS_PER_S, now);
  }

  /** Judges one frame; `browserRate` is the socket's configured microphone rate. */
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
