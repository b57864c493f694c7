/**
 * How long newly arrived media waits before it plays (the newest media's time minus the
 * media time playing, taken as each segment lands): the median over the latest
 * arrivals. The player's share of glass to glass (`glass_to_glass_ms_est` of
 * `client.stats`, DECISIONS 6): what the service adds before a segment leaves it is
 * its own metric.
 */

/** Arrivals the median is taken over (about a second of 40-ms segments). */
export const ARRIVALS_KEPT = 25;

export class ArrivalWait {
  #xs: number[] = [];

  /** One arrival: its media waits `ms` before it plays (negative or NaN: ignored). */
  sample(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.#xs.push(ms);
    if (this.#xs.length > ARRIVALS_KEPT) this.#xs.shift();
  }

  /** A new stream: its waits start over. */
  reset(): void {
    this.#xs = [];
  }

  /** The median wait (ms, rounded), null before any arrival. */
  get ms(): number | null {
    if (this.#xs.length === 0) return null;
    const s = [...this.#xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return Math.round(s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2);
  }
}
