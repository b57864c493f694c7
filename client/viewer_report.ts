/**
 * What this viewer experiences, for the service (`client.stats`, DECISIONS 6): sent by
 * the player every `REPORT_EVERY_MS` while its socket is open, and once when it closes.
 * Only what the player measures: the decoder in use, socket open → first frame shown,
 * stalls (MediaSource playheads stuck at a hole), audio underruns (WebCodecs), the audio
 * queued ahead of the ear (WebCodecs) or WebRTC's playout delay, the audio output's
 * latency (WebCodecs' AudioContext), frames shown and dropped, and its share of glass to
 * glass: how long arrived media waits to play (../arrival_wait.ts), plus the audio
 * output's latency where it is known; WebRTC's playout delay.
 */
import type { PlayerStats } from "./player_types.ts";

/** How often a report goes out, ms. */
export const REPORT_EVERY_MS = 5000;
/**
 * Reports are never closer than this, ms: the service takes at most one a second, timed
 * as they arrive, and a socket or a busy page can bunch two by a few hundred ms.
 */
export const REPORT_MIN_GAP_MS = 1500;

export class ViewerReport {
  #openedAt: number | null = null;
  #firstFrameMs: number | null = null;
  #lastAt = -Infinity;
  /** The first frame showed since the last report: the next one goes out soon. */
  #news = false;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A socket opened: its first frame is timed from now. */
  opened(): void {
    this.#openedAt = this.now();
    this.#firstFrameMs = null;
  }

  /** A picture is shown: the first time since the socket opened, its first frame. */
  shown(): void {
    if (this.#openedAt !== null && this.#firstFrameMs === null) {
      this.#firstFrameMs = this.now() - this.#openedAt;
      this.#news = true;
    }
  }

  /**
   * Whether a report is due now (then it counts as sent): every `REPORT_EVERY_MS`, and
   * as soon as `REPORT_MIN_GAP_MS` allows after the first frame showed.
   */
  due(): boolean {
    const t = this.now(), since = t - this.#lastAt;
    if (since < (this.#news ? REPORT_MIN_GAP_MS : REPORT_EVERY_MS)) {
      return false;
    }
    this.#lastAt = t;
    this.#news = false;
    return true;
  }

  /** The `client.stats` message of `s`. */
  message(s: PlayerStats): Record<string, unknown> {
    const msg: Record<string, unknown> = { type: "client.stats" };
    if (s.decoder) msg.decoder = s.decoder;
    if (this.#firstFrameMs !== null) {
      msg.first_frame_ms = Math.round(this.#firstFrameMs);
    }
    if (s.decoder === "mse") {
      msg.stalls = s.gapSkips;
      if (s.arrivalWaitMs !== null) msg.glass_to_glass_ms_est = s.arrivalWaitMs;
    }
    if (s.decoder === "webcodecs") {
      msg.underruns = s.webcodecs.underruns;
      msg.jitter_buffer_ms = Math.round(s.webcodecs.latencyMs);
      const output = Math.round(s.webcodecs.outputLatencyMs);
      msg.audio_output_latency_ms = output;
      msg.frames_shown = s.webcodecs.framesDrawn;
      msg.frames_dropped = s.webcodecs.framesSkipped;
      const wait = s.webcodecs.arrivalWaitMs;
      if (wait !== null) {
        msg.glass_to_glass_ms_est = wait + output;
      }
    }
    if (s.decoder === "webrtc") {
      msg.jitter_buffer_ms = Math.round(s.rtc.playoutDelayMs);
      msg.frames_shown = s.rtc.framesDecoded;
      if (s.rtc.framesDecoded > 0) {
        msg.glass_to_glass_ms_est = msg.jitter_buffer_ms;
      }
    }
    return msg;
  }
}
