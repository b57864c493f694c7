/**
 * When the browser client dials its media socket again (client/browser.ts): at the time
 * it asks after a drop, then with a doubling backoff and jitter after failed dials, and
 * not at all once `max` dials failed since media last played.
 */
export class Redial {
  /** Dials since media last played. */
  #attempts = 0;
  /** Dials ever (the player's `stats.reconnects`). */
  #total = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly max: number) {}

  get total(): number {
    return this.#total;
  }

  /** Media plays again: the attempts start over. */
  playing(): void {
    this.#attempts = 0;
  }

  /** Runs `dial` after `delayMs`, replacing a pending one; false when attempts are spent. */
  schedule(delayMs: number, dial: () => void): boolean {
    clearTimeout(this.#timer);
    if (this.#attempts >= this.max) return false;
    this.#timer = setTimeout(dial, delayMs);
    return true;
  }

  /** A dial starts. */
  begin(): void {
    this.#attempts++;
    this.#total++;
  }

  /** The wait after a failed dial: 500 ms doubled per attempt, at most 30 s, ±20 %. */
  backoffMs(): number {
    const backoff = Math.min(30_000, 500 * 2 ** this.#attempts);
    return backoff * (0.8 + 0.4 * Math.random());
  }

  cancel(): void {
    clearTimeout(this.#timer);
  }
}
