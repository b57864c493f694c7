/**
 * A token bucket on an injected clock: `capacity` tokens at most, refilled at `perSecond`.
 * The media plane uses it for per-socket floods (text frames, microphone audio, errors
 * sent back) and per-session takeovers.
 */
export class TokenBucket {
  #tokens: number;
  #at: number;

  constructor(
    readonly capacity: number,
    readonly perSecond: number,
    private readonly now: () => number,
  ) {
    this.#tokens = capacity;
    this.#at = now();
  }

  #refill(): void {
    const t = this.now();
    const elapsed = Math.max(0, t - this.#at) / 1000;
    this.#tokens = Math.min(
      this.capacity,
      this.#tokens + elapsed * this.perSecond,
    );
    this.#at = t;
  }

  /** Takes `n` tokens when there are that many; false (and takes none) otherwise. */
  take(n = 1): boolean {
    this.#refill();
    if (this.#tokens < n) return false;
    this.#tokens -= n;
    return true;
  }

  /** Seconds until `n` tokens are there (0 when they are now), rounded up. */
  waitSeconds(n = 1): number {
    this.#refill();
    if (this.#tokens >= n) return 0;
    return Math.ceil((n - this.#tokens) / this.perSecond);
  }
}
