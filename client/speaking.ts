/**
 * `avatar.speaking` on the playback clock: the server stamps each speech start and stop
 * (`media_time_ms`); this schedule fires them when playback reaches that time, so a
 * page's "speaking" indicator matches what is seen and heard rather than when the
 * message arrived (docs/media-protocol.md), on the clock of ./clock.ts.
 */
import type { MediaClock } from "./clock.ts";
import type { SpeakingDetail } from "./player_types.ts";

export class SpeakingSchedule {
  #pending: SpeakingDetail[] = [];
  /** The turn last reported speaking (until its stop). */
  #speaking: string | null = null;
  #waiting = false;

  /** `clock`: the playback clock in `media_time_ms` units (./clock.ts). */
  constructor(
    private readonly clock: MediaClock,
    private readonly fire: (detail: SpeakingDetail) => void,
  ) {}

  /** Where playback is, in `media_time_ms` units. */
  #now(): number {
    return this.clock.now();
  }

  /** Whether the avatar is speaking at the video's current time. */
  get speaking(): boolean {
    return this.#speaking !== null;
  }

  /**
   * The speech at and ahead of the playback clock, up to `toMs`: whether the avatar
   * speaks now, and the first speech start scheduled by then (null: none).
   */
  speechAhead(toMs: number): { speaking: boolean; nextStartMs: number | null } {
    const next = this.#pending.find((d) =>
      d.speaking && d.media_time_ms <= toMs
    );
    return {
      speaking: this.#speaking !== null,
      nextStartMs: next?.media_time_ms ?? null,
    };
  }

  /** Schedules an event of the current stream. */
  add(detail: SpeakingDetail): void {
    this.#pending.push(detail);
    this.#pending.sort((a, b) => a.media_time_ms - b.media_time_ms);
    this.check();
  }

  /**
   * A new stream restarts media time: what was scheduled on the old one is dropped, and
   * a speaking avatar is reported silent (the new stream reports its own speech).
   */
  reset(): void {
    this.#pending = [];
    const turn = this.#speaking;
    if (turn !== null) {
      this.#speaking = null;
      this.fire({
        speaking: false,
        turn_id: turn,
        media_time_ms: Math.round(this.#now()),
      });
    }
  }

  /** Fires every event the video has reached; keeps watching while any is left. */
  check(): void {
    const now = this.#now();
    while (this.#pending.length > 0 && this.#pending[0].media_time_ms <= now) {
      const d = this.#pending.shift()!;
      // A takeover socket hears of the speech under way again: reported once.
      if (d.speaking && this.#speaking === d.turn_id) continue;
      this.#speaking = d.speaking ? d.turn_id : null;
      this.fire(d);
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
