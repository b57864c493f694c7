/**
 * When MSE playback (./mse.ts) jumps to the live edge. Past `maxLatencyS` behind the
 * newest media the playhead moves to `targetLatencyS` before it; a new stream (a
 * takeover's GOP burst, up to a second behind live) is moved sooner, for
 * `CATCH_UP_MS`. A jump is a seek, and a seek flushes the browser's audio and waits
 * for a new preroll: on a browser too slow to preroll before the stream grows past
 * the limit again (WebKitGTK under load: a second per seek), jumping again at once
 * seeks for ever and plays no sound at all. So: no jump until the last one has played `SETTLE_S` (or `SETTLE_MAX_MS` passed: a video that
 * never moves is moved again), and a stream that falls behind again within
 * `STRUGGLE_MS` of a jump gets half the limit more room, once per jump, up to
 * `MAX_ROOM` times it, for the rest of the stream. And a jump skips silence, not what
 * the avatar says: none while it speaks (unless `SPEECH_CAP` times the limit behind),
 * and one that would skip a speech start buffered ahead lands just before it. A
 * playhead that has not moved for `SETTLE_MAX_MS` is sought again even so (before the
 * speech start, or where it is inside speech): WebKitGTK under load left one stuck
 * where a jump landed, and the speech rules kept it there for a minute.
 */

/**
 * How long a new stream may be moved at a smaller lag than `maxLatencyS`: a takeover
 * starts with the current GOP in one burst, from its keyframe, so up to a second
 * behind live, and would otherwise play that late until it drifted past `maxLatencyS`.
 * A fresh session's stream grows in real time and is never that far behind (Chromium
 * starts once ~0.2 s is buffered).
 */
export const CATCH_UP_MS = 1_500;
/** Lag past the target that moves a new stream (seconds). */
export const CATCH_UP_SLACK_S = 0.15;
/** Media played since a jump landed before another jump (seconds). */
export const SETTLE_S = 0.5;
/** A jump that never played may be followed by another after this (ms). */
export const SETTLE_MAX_MS = 3_000;
/** Falling behind again this soon after a jump means the browser needs more room (ms). */
export const STRUGGLE_MS = 5_000;
/** The most room a struggling stream gets, as a multiple of `maxLatencyS`. */
export const MAX_ROOM = 3;
/** Behind by this multiple of `maxLatencyS`, a jump cuts even speech. */
export const SPEECH_CAP = 4;
/** A jump lands this far before a speech start it would skip (seconds). */
export const SPEECH_LEAD_S = 0.1;

/** A playhead that moved less than this past a nudge has not moved (seconds). */
export const STILL_S = 0.01;
/** How far past a stuck playhead it is sought again (seconds). */
export const NUDGE_S = 0.02;
/** A seek still under way after this long is no longer waited for (ms). */
export const SEEK_WAIT_MS = 2_000;

/**
 * Whether to leave a seek under way to finish (another would restart it) — for at
 * most `SEEK_WAIT_MS`: a seek the browser never completes (WebKitGTK under load kept
 * one pending for a minute, the video stuck) is then overridden by the next one.
 */
export class SeekWait {
  #since: number | null = null;

  /** True while `seeking` (the video's) has lasted less than `SEEK_WAIT_MS` at `now`. */
  wait(now: number, seeking: boolean): boolean {
    if (!seeking) {
      this.#since = null;
      return false;
    }
    this.#since ??= now;
    if (now - this.#since < SEEK_WAIT_MS) return true;
    // Overridden: the seek made now gets its own wait.
    this.#since = now;
    return false;
  }
}

/** Where the playhead is and what is buffered, as `decide` reads it. */
export interface PlayheadState {
  /** `performance.now()`, ms. */
  now: number;
  /** The video's current time, seconds. */
  time: number;
  /** The end of the newest buffered media, seconds. */
  end: number;
  /**
   * The speech there (./speaking.ts): whether the avatar speaks at the playhead, and
   * the first speech start buffered ahead (seconds; null: none). Absent: none known.
   */
  speech?: { speaking: boolean; nextStartS: number | null };
}

export class LiveEdge {
  #maxLag: number;
  #catchUpUntil = 0;
  /**
   * Where the last jump landed (media seconds), when (ms), and whether falling behind
   * since gave the stream more room already; null before a jump.
   */
  #landed: { time: number; at: number; roomed: boolean } | null = null;
  /**
   * Where the playhead was last seen to move (media seconds), when (ms), and how
   * often it was sought again since without moving.
   */
  #still: { time: number; since: number; kicks: number } | null = null;

  constructor(
    private readonly maxLatencyS: number,
    private readonly targetLatencyS: number,
  ) {
    this.#maxLag = maxLatencyS;
  }

  /** The lag past which playback jumps now (seconds): `maxLatencyS`, or more. */
  get maxLagS(): number {
    return this.#maxLag;
  }

  /** A new stream starts at `now` (ms): back to `maxLatencyS`, catching up a while. */
  reset(now: number): void {
    this.#maxLag = this.maxLatencyS;
    this.#landed = null;
    this.#still = null;
    this.#catchUpUntil = now + CATCH_UP_MS;
  }

  /**
   * Where to jump (media seconds), or null to keep playing where it is. Not asked
   * while a seek is under way (./mse.ts): another would restart it.
   */
  decide(s: PlayheadState): number | null {
    if (
      !this.#still || Math.abs(s.time - this.#still.time) > NUDGE_S + STILL_S
    ) {
      this.#still = { time: s.time, since: s.now, kicks: 0 };
    }
    const still = this.#still;
    // A playhead that has not moved for `SETTLE_MAX_MS` (WebKitGTK under load left
    // one stuck where a jump landed): the speech rules below no longer hold it. Each
    // seek that did not move it doubles the wait for the next (a browser slow to
    // preroll is not sought again and again).
    const stuck = s.now - still.since >= SETTLE_MAX_MS * 2 ** still.kicks;
    const lag = s.end - s.time;
    const catchingUp = s.now < this.#catchUpUntil &&
      lag > this.targetLatencyS + CATCH_UP_SLACK_S;
    if (lag <= this.#maxLag && !catchingUp) return null;
    const last = this.#landed;
    if (last) {
      const since = s.now - last.at;
      if (s.time - last.time < SETTLE_S && since < SETTLE_MAX_MS) return null;
      if (since < STRUGGLE_MS && !last.roomed) {
        last.roomed = true;
        this.#maxLag = Math.min(
          this.maxLatencyS * MAX_ROOM,
          this.#maxLag + this.maxLatencyS / 2,
        );
        if (lag <= this.#maxLag && !catchingUp) return null;
      }
    }
    let to = s.end - this.targetLatencyS;
    const speech = s.speech;
    if (speech?.speaking && lag <= this.maxLatencyS * SPEECH_CAP) {
      if (!stuck) return null;
      // Stuck inside speech: sought again just past where it is (a new seek, a new
      // preroll; a seek to the very same time may be no seek at all).
      to = s.time + NUDGE_S;
    } else if (speech && speech.nextStartS !== null && speech.nextStartS < to) {
      // The silence before it goes, not the answer (stuck there: sought again).
      to = speech.nextStartS - SPEECH_LEAD_S;
      if (to <= s.time) {
        if (!stuck) return null;
        to = s.time + NUDGE_S;
      }
    }
    this.#landed = { time: to, at: s.now, roomed: false };
    this.#still = {
      time: to,
      since: s.now,
      kicks: stuck && Math.abs(to - s.time) <= NUDGE_S + STILL_S
        ? still.kicks + 1
        : 0,
    };
    this.#catchUpUntil = 0;
    return to;
  }
}
