/**
 * Admission of browser audio into an engine socket (see `UserAudioGate`): what one
 * tenant's slow engine or flooding browser may cost the shared process.
 */
import type { UserAudioStats } from "../ports/providers.ts";

/**
 * Bytes the engine socket may have queued (written by us, not yet taken by the engine)
 * before user audio is dropped instead of queued: a slow engine costs at most this much
 * memory per session, not whatever the browser sends.
 */
export const MAX_ENGINE_BUFFERED_BYTES = 1024 * 1024;
/** User audio may arrive at most this many times faster than real time, sustained. */
export const USER_AUDIO_MAX_SPEED = 2;
/** Audio (ms, at the browser's declared rate) accepted at once above that speed. */
export const USER_AUDIO_BURST_MS = 5000;

/**
 * Admission of browser audio into the engine socket: a frame is dropped (and counted)
 * when the socket already holds more than `MAX_ENGINE_BUFFERED_BYTES` unsent, or when it
 * exceeds a token bucket of `USER_AUDIO_BURST_MS` refilled at `USER_AUDIO_MAX_SPEED`×
 * wall time. The first drop of each kind is reported to `onFirstDrop`.
 */
export class UserAudioGate {
  #counts: UserAudioStats = {
    sent: 0,
    droppedBackpressure: 0,
    droppedOverRate: 0,
  };
  #budgetMs = USER_AUDIO_BURST_MS;
  #at: number;

  constructor(
    private readonly now: () => number,
    private readonly onFirstDrop: (reason: string) => void,
  ) {
    this.#at = now();
  }

  stats(): UserAudioStats {
    return { ...this.#counts };
  }

  /** Whether a frame of `samples` at `rate` may go to a socket holding `buffered` bytes. */
  admit(samples: number, rate: number, buffered: number): boolean {
    const now = this.now();
    this.#budgetMs = Math.min(
      USER_AUDIO_BURST_MS,
      this.#budgetMs + Math.max(0, now - this.#at) * USER_AUDIO_MAX_SPEED,
    );
    this.#at = now;
    const costMs = (samples * 1000) / rate;
    const c = this.#counts;
    if (costMs > this.#budgetMs + 1e-6) {
      if (c.droppedOverRate++ === 0) {
        this.onFirstDrop("faster than real time");
      }
      return false;
    }
    this.#budgetMs -= costMs;
    if (buffered > MAX_ENGINE_BUFFERED_BYTES) {
      if (c.droppedBackpressure++ === 0) {
        this.onFirstDrop("engine not reading");
      }
      return false;
    }
    c.sent++;
    return true;
  }
}
