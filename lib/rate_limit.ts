/**
 * Request rate limits (DECISIONS 9, SPEC 8): a fixed 60-s window per subject (a hash of
 * the raw credential, or of the client address when none was sent), shared by every
 * instance through KV without a KV write per request. Each instance counts locally and
 * merges its counts into KV in batches (atomic `sum` on a per-window key), reading the
 * global totals back in the same flush. One instance is exact; several may overshoot by
 * at most what they admit between two merges.
 *
 * KV's `sum` keeps no expiry (a sum even clears the expiry of the key it adds to), so
 * the flush also sweeps the keys of windows older than the previous one.
 */
import { createHash } from "node:crypto";
import type { AppDeps } from "./deps.ts";
import type { Logger } from "./log.ts";

/** Length of one rate-limit window. */
export const RATE_LIMIT_WINDOW_MS = 60_000;
/** How often local counts are merged into KV. */
export const RATE_LIMIT_FLUSH_MS = 250;

const KV_MUTATIONS_MAX = 1000;
const KV_GET_MANY_MAX = 10;
const SWEEP_BATCH = 500;

/** KV key of one subject's counter in one window (a `Deno.KvU64`). */
export function rateLimitKey(
  window: number,
  subject: string,
): ["rate_limits", number, string] {
  return ["rate_limits", window, subject];
}

/**
 * The subject a request is counted against: a SHA-256 of the raw credential when one
 * was sent, else of the client address. Neither the credential nor the address is kept.
 */
export function rateLimitSubject(
  credential: string | null,
  remoteAddr: string,
): string {
  const [kind, value] = credential !== null
    ? ["c", credential]
    : ["a", remoteAddr];
  return kind + ":" +
    createHash("sha256").update(kind + "\0" + value).digest("hex");
}

/** The outcome of one request against its subject's window. */
export interface RateLimitDecision {
  allowed: boolean;
  /** Requests allowed per window (`X-RateLimit-Limit`). */
  limit: number;
  /** Requests left in this window after this one (`X-RateLimit-Remaining`). */
  remaining: number;
  /** Window end, epoch seconds (`X-RateLimit-Reset`). */
  reset: number;
  /** Seconds until the window ends, at least 1 (`Retry-After` on a 429). */
  retryAfter: number;
}

interface Entry {
  window: number;
  /** Global total last read from KV (includes what this instance merged before). */
  global: number;
  /** Counted here, being merged by the running flush. */
  inFlight: number;
  /** Counted here, not yet merged. */
  pending: number;
}

export interface RateLimiterOptions {
  kv: Deno.Kv;
  /** Requests per subject per window. */
  limit: number;
  now: () => number;
  log?: Logger;
  windowMs?: number;
}

/** Local counters of one instance, merged into KV by `flush()`. */
export class RateLimiter {
  readonly limit: number;
  readonly #kv: Deno.Kv;
  readonly #now: () => number;
  readonly #log?: Logger;
  readonly #windowMs: number;
  readonly #entries = new Map<string, Entry>();
  #running: Promise<void> | null = null;
  #sweptBelow = 0;
  #failing = false;

  constructor(options: RateLimiterOptions) {
    this.limit = options.limit;
    this.#kv = options.kv;
    this.#now = options.now;
    this.#log = options.log;
    this.#windowMs = options.windowMs ?? RATE_LIMIT_WINDOW_MS;
  }

  /** Counts one request of `subject` when it is within the limit; never touches KV. */
  take(subject: string): RateLimitDecision {
    const nowMs = this.#now();
    const window = Math.floor(nowMs / this.#windowMs);
    let e = this.#entries.get(subject);
    if (e === undefined || e.window !== window) {
      e = { window, global: 0, inFlight: 0, pending: 0 };
      this.#entries.set(subject, e);
    }
    const resetMs = (window + 1) * this.#windowMs;
    const reset = Math.ceil(resetMs / 1000);
    const retryAfter = Math.max(1, Math.ceil((resetMs - nowMs) / 1000));
    const used = e.global + e.inFlight + e.pending;
    if (used >= this.limit) {
      return {
        allowed: false,
        limit: this.limit,
        remaining: 0,
        reset,
        retryAfter,
      };
    }
    e.pending++;
    return {
      allowed: true,
      limit: this.limit,
      remaining: this.limit - used - 1,
      reset,
      retryAfter,
    };
  }

  /**
   * Merges local counts into KV and reads back the global totals of every subject seen
   * in the current window. Runs after any flush already in progress.
   */
  async flush(): Promise<void> {
    while (this.#running) await this.#running;
    this.#running = this.#flushOnce().finally(() => {
      this.#running = null;
    });
    await this.#running;
  }

  /** A flush unless one is already running (the timer's tick). */
  tick(): Promise<void> {
    return this.#running ?? this.flush();
  }

  async #flushOnce(): Promise<void> {
    const window = Math.floor(this.#now() / this.#windowMs);
    const batch: [string, Entry, number][] = [];
    const readBack: [string, Entry][] = [];
    for (const [subject, e] of this.#entries) {
      if (e.window < window) {
        this.#entries.delete(subject);
        continue;
      }
      if (e.pending > 0) {
        e.inFlight = e.pending;
        e.pending = 0;
        batch.push([subject, e, e.inFlight]);
      }
      readBack.push([subject, e]);
    }
    try {
      for (let i = 0; i < batch.length; i += KV_MUTATIONS_MAX) {
        const op = this.#kv.atomic();
        for (const [subject, e, n] of batch.slice(i, i + KV_MUTATIONS_MAX)) {
          op.sum(rateLimitKey(e.window, subject), BigInt(n));
        }
        const res = await op.commit();
        if (!res.ok) throw new Error("rate-limit merge was not committed");
        for (const [, e, n] of batch.slice(i, i + KV_MUTATIONS_MAX)) {
          e.global += n;
          e.inFlight -= n;
        }
      }
      await this.#readBack(readBack);
      await this.#sweep(window);
      if (this.#failing) this.#log?.info("rate-limit merge recovered");
      this.#failing = false;
    } catch (err) {
      for (const [, e] of batch) {
        e.pending += e.inFlight;
        e.inFlight = 0;
      }
      if (!this.#failing) {
        this.#log?.warn("rate-limit merge failed; counting locally", { err });
      }
      this.#failing = true;
    }
  }

  async #readBack(entries: [string, Entry][]): Promise<void> {
    const chunks: [string, Entry][][] = [];
    for (let i = 0; i < entries.length; i += KV_GET_MANY_MAX) {
      chunks.push(entries.slice(i, i + KV_GET_MANY_MAX));
    }
    await Promise.all(chunks.map(async (chunk) => {
      const windows = chunk.map(([, e]) => e.window);
      const got = await this.#kv.getMany<Deno.KvU64[]>(
        chunk.map(([subject], i) => rateLimitKey(windows[i], subject)),
      );
      chunk.forEach(([, e], i) => {
        const total = got[i].value;
        // The entry may have moved to a new window while KV answered.
        if (total === null || e.window !== windows[i]) return;
        e.global = Math.max(e.global, Number(total.value));
      });
    }));
  }

  /** Deletes counters of windows before the previous one (any instance may do it). */
  async #sweep(window: number): Promise<void> {
    const below = window - 1;
    if (below <= this.#sweptBelow) return;
    const keys: Deno.KvKey[] = [];
    const iter = this.#kv.list({
      start: ["rate_limits"],
      end: ["rate_limits", below],
    }, { limit: SWEEP_BATCH });
    for await (const entry of iter) keys.push(entry.key);
    if (keys.length > 0) {
      const op = this.#kv.atomic();
      for (const key of keys) op.delete(key);
      await op.commit();
    }
    if (keys.length < SWEEP_BATCH) this.#sweptBelow = below;
  }
}

const limiters = new WeakMap<AppDeps, RateLimiter>();

/**
 * Starts the app's rate limiter: a merge every `flushMs` and one last merge when the app
 * closes (`deps.onClose`).
 */
export function startRateLimiter(
  deps: AppDeps,
  flushMs = RATE_LIMIT_FLUSH_MS,
): RateLimiter {
  const existing = limiters.get(deps);
  if (existing) return existing;
  const limiter = new RateLimiter({
    kv: deps.kv,
    limit: deps.config.rateLimitPerMinute,
    now: deps.now,
    log: deps.log,
  });
  limiters.set(deps, limiter);
  const timer = setInterval(() => void limiter.tick(), flushMs);
  deps.onClose.push(async () => {
    clearInterval(timer);
    await limiter.flush();
    limiters.delete(deps);
  });
  return limiter;
}

/** The rate limiter `startRateLimiter` started on `deps`. */
export function rateLimiterOf(deps: AppDeps): RateLimiter {
  const limiter = limiters.get(deps);
  if (!limiter) throw new Error("rate limiter not started (initServices)");
  return limiter;
}
