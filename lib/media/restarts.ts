/**
 * How often a live session's fMP4 stream may fail and restart on the same socket
 * (./live.ts) before the session ends as `render_failed` instead.
 */

/** Stream failures a minute after which the session ends instead of restarting. */
export const MAX_STREAM_RESTARTS = 3;

/** The failures of the last minute. */
export class RestartWindow {
  #times: number[] = [];

  /** Counts a failure at `now` (ms); false once more than the bound fell in a minute. */
  allow(now: number): boolean {
    this.#times = this.#times.filter((t) => now - t < 60_000);
    this.#times.push(now);
    return this.#times.length <= MAX_STREAM_RESTARTS;
  }
}
