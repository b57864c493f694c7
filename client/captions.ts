/**
 * Captions in step with the mouth: each avatar `transcript` carries `media_time_ms`, the
 * stream time at which the audio of its text begins (DECISIONS 6), and is fired as a
 * `caption` when playback reaches it (on the clock of ./clock.ts), not when it arrives,
 * often seconds earlier. User transcripts, and avatar text without a time (a server
 * that does not stamp them), are captions at once; text whose audio was cut by an
 * interrupt (`heard: false`) is reported at once as not heard.
 */
import type { MediaClock } from "./clock.ts";
import type { CaptionDetail } from "./player_types.ts";

/** Captions waiting for their time, at most (the oldest fires early past it). */
const MAX_PENDING = 256;

export class CaptionSchedule {
  #pending: Array<CaptionDetail & { media_time_ms: number }> = [];
  #waiting = false;

  constructor(
    private readonly clock: MediaClock,
    private readonly fire: (detail: CaptionDetail) => void,
  ) {}

  /** A transcript of the socket: fired now or scheduled for its media time. */
  add(detail: CaptionDetail): void {
    const at = detail.media_time_ms;
    if (detail.role === "user" || !detail.heard || at === null) {
      this.fire(detail);
      return;
    }
    this.#pending.push({ ...detail, media_time_ms: at });
    // Stable: texts of one time keep their order of arrival.
    this.#pending.sort((a, b) => a.media_time_ms - b.media_time_ms);
    if (this.#pending.length > MAX_PENDING) this.fire(this.#pending.shift()!);
    this.check();
  }

  /**
   * A new stream restarts media time: what waits on the old one is shown now (its audio
   * was sent before the socket changed).
   */
  reset(): void {
    for (const d of this.#pending.splice(0)) this.fire(d);
  }

  /** Fires every caption playback has reached; keeps watching while any is left. */
  check(): void {
    const now = this.clock.now();
    while (this.#pending.length > 0 && this.#pending[0].media_time_ms <= now) {
      this.fire(this.#pending.shift()!);
    }
    if (this.#pending.length > 0 && !this.#waiting) {
      this.#waiting = true;
      this.clock.wake(this.#pending[0].media_time_ms, () => {
        this.#waiting = false;
        this.check();
      });
    }
  }
}
