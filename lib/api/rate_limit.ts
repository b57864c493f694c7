/**
 * Request rate limits (DECISIONS 9, SPEC 8): a fixed 60-s window per subject
 * (./rate_subjects.ts): per verified principal, else per client address (IPv6 by /64).
 * Shared by every instance through KV without a KV write per request: each instance
 * counts locally and merges its counts into KV in batches (atomic `sum` on a per-window
 * key), reading back, in the same flush, the global totals of the subjects it merged
 * (never every subject it ever saw). One instance is exact; several may overshoot by at
 * most what they admit between two merges.
 *
 * The per-request rules are in ./rate_charge.ts: `chargeVerified` counts a verified
 * principal (`authenticate` calls it); `chargeUnverified` counts everything
 * else against its client address, whatever path it asked for. A credential that
 * verifies is never counted against its address, so other clients' failures there
 * cannot refuse it.
 *
 * The local maps are bounded: at most `maxAddresses` address windows and
 * `maxPrincipals` principal windows a window. Past the address bound, new addresses share
 * one overflow window (an attacker spraying addresses slows only unverified traffic).
 * Past the principal bound, a new principal takes the window of the least recently used
 * principal whose counts are merged (its total stays in KV and is read back when it
 * returns), never a shared window: a tenant that mints keys by the thousand must not be
 * able to spend one window that every other tenant's keys then fall into.
 *
 * The counters in KV, their merge, read-back and sweep of old windows: ./rate_store.ts.
 */
import type { AppDeps } from "../deps.ts";
import type { Logger } from "../log.ts";
import { deriveKey } from "../token_secret.ts";
import { addressGroup, isAddressSubject, SubjectMac } from "./rate_subjects.ts";
import {
  type CounterMerge,
  mergeCounters,
  readCounters,
  sweepCountersBefore,
} from "./rate_store.ts";

/** Length of one rate-limit window. */
export const RATE_LIMIT_WINDOW_MS = 60_000;
/** How often local counts are merged into KV. */
export const RATE_LIMIT_FLUSH_MS = 250;

/** Label of the key derived from `TOKEN_SECRET` for rate-limit subjects. */
const SUBJECT_KEY_LABEL = "rate-limit-subject";

/** Default bound on the address windows of one window (`maxAddresses`). */
export const MAX_ADDRESS_SUBJECTS = 50_000;
/** Default bound on the principal windows of one window (`maxPrincipals`). */
export const MAX_PRINCIPAL_SUBJECTS = 50_000;
/** The shared window of address subjects past the bound. */
export const ADDRESS_OVERFLOW_SUBJECT = "a:overflow";
/**
 * Least recently used principal windows looked at for one whose counts are merged, when a
 * new principal needs room; none of them merged (cannot happen short of the whole bound
 * being used within one flush) → the new principal is admitted uncounted.
 */
const PRINCIPAL_EVICT_SCAN = 32;
/** Client address → subject cache entries kept before the cache starts over. */
const ADDRESS_CACHE_MAX = 10_000;

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

/** One entry's counts being merged by a flush. */
interface Merge extends CounterMerge {
  entry: Entry;
}

export interface RateLimiterOptions {
  kv: Deno.Kv;
  /** Requests per subject per window. */
  limit: number;
  now: () => number;
  log?: Logger;
  windowMs?: number;
  /** HMAC key of address and IdP subjects, at least 32 bytes; random when omitted. */
  subjectKey?: Uint8Array;
  /** Address windows kept per window before new addresses share one (50,000). */
  maxAddresses?: number;
  /** Principal windows kept per window before new principals share one (50,000). */
  maxPrincipals?: number;
}

/** What one flush did, for tests and the operator's curiosity. */
export interface FlushStats {
  /** Subjects whose counts were merged (and read back). */
  merged: number;
  /** Keys read back from KV. */
  readBack: number;
}

/** Local counters of one instance, merged into KV by `flush()`. */
export class RateLimiter {
  readonly limit: number;
  readonly #kv: Deno.Kv;
  readonly #now: () => number;
  readonly #log?: Logger;
  readonly #windowMs: number;
  readonly #mac: SubjectMac;
  readonly #maxAddresses: number;
  readonly #maxPrincipals: number;
  readonly #entries = new Map<string, Entry>();
  /** Entries of `#entries` that are address subjects (the rest are principals). */
  #addresses = 0;
  /** The principal subjects of `#entries`, least recently used first. */
  readonly #principals = new Set<string>();
  /** Client address → its subject (a cache: the group and its MAC cost ~4 µs). */
  readonly #addressSubjects = new Map<string, string>();
  #running: Promise<void> | null = null;
  #sweptBelow = 0;
  #failing = false;
  /** What the last completed flush did. */
  lastFlush: FlushStats = { merged: 0, readBack: 0 };

  constructor(options: RateLimiterOptions) {
    this.limit = options.limit;
    this.#kv = options.kv;
    this.#now = options.now;
    this.#log = options.log;
    this.#windowMs = options.windowMs ?? RATE_LIMIT_WINDOW_MS;
    this.#mac = new SubjectMac(
      options.subjectKey ?? crypto.getRandomValues(new Uint8Array(32)),
    );
    this.#maxAddresses = options.maxAddresses ?? MAX_ADDRESS_SUBJECTS;
    this.#maxPrincipals = options.maxPrincipals ?? MAX_PRINCIPAL_SUBJECTS;
  }

  /** Subjects counted locally now (both kinds), for tests of the bound. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The subject of a client address: a keyed MAC of its group (`addressGroup`: IPv4 as
   * it is, IPv6 by /64), so no address reaches KV.
   */
  addressSubject(remoteAddr: string): string {
    let subject = this.#addressSubjects.get(remoteAddr);
    if (subject === undefined) {
      subject = this.#mac.subject("a", addressGroup(remoteAddr));
      if (this.#addressSubjects.size >= ADDRESS_CACHE_MAX) {
        this.#addressSubjects.clear();
      }
      this.#addressSubjects.set(remoteAddr, subject);
    }
    return subject;
  }

  /** The subject of a verified IdP token: a keyed MAC of its `sub`. */
  idpSubject(sub: string): string {
    return this.#mac.subject("i", sub);
  }

  /**
   * What `take(subject)` would decide, without counting and without keeping the subject
   * (a subject never counted on this instance reads as untouched).
   */
  peek(subject: string): RateLimitDecision {
    const nowMs = this.#now();
    const window = Math.floor(nowMs / this.#windowMs);
    const e = this.#entries.get(this.#counted(subject, false));
    const used = e !== undefined && e.window === window
      ? e.global + e.inFlight + e.pending
      : 0;
    return this.#decision(nowMs, window, used, used < this.limit);
  }

  /** Counts one request of `subject` when it is within the limit; never touches KV. */
  take(subject: string): RateLimitDecision {
    const nowMs = this.#now();
    const window = Math.floor(nowMs / this.#windowMs);
    let counted = subject;
    let e = this.#entries.get(subject);
    if (e === undefined) {
      if (!isAddressSubject(subject) && !this.#roomForPrincipal()) {
        // Every principal window was used within one flush: admit, uncounted.
        return this.#decision(nowMs, window, 1, true);
      }
      counted = this.#counted(subject, true);
      e = this.#entries.get(counted);
      if (e === undefined && isAddressSubject(counted)) this.#addresses++;
    }
    if (!isAddressSubject(counted)) {
      // Most recently used last: eviction looks at the front.
      this.#principals.delete(counted);
      this.#principals.add(counted);
    }
    if (e === undefined || e.window !== window) {
      // A new entry for a new window: a running flush may still hold the old one.
      e = { window, global: 0, inFlight: 0, pending: 0 };
      this.#entries.set(counted, e);
    }
    const used = e.global + e.inFlight + e.pending;
    if (used >= this.limit) return this.#decision(nowMs, window, used, false);
    e.pending++;
    return this.#decision(nowMs, window, used + 1, true);
  }

  /**
   * The subject a request of `subject` is counted under: itself, or its kind's overflow
   * subject when the bound of its kind is reached and it has no window yet.
   */
  #counted(subject: string, adding: boolean): string {
    if (!adding && this.#entries.has(subject)) return subject;
    if (isAddressSubject(subject)) {
      return this.#addresses < this.#maxAddresses
        ? subject
        : ADDRESS_OVERFLOW_SUBJECT;
    }
    return subject;
  }

  /**
   * Makes room for one more principal window when the bound is reached, by forgetting
   * the least recently used principal whose counts are all merged into KV (nothing is
   * lost: its total is read back from KV when it is counted again). False when none of
   * the `PRINCIPAL_EVICT_SCAN` least recently used is merged.
   */
  #roomForPrincipal(): boolean {
    if (this.#principals.size < this.#maxPrincipals) return true;
    let looked = 0;
    for (const subject of this.#principals) {
      if (++looked > PRINCIPAL_EVICT_SCAN) break;
      const e = this.#entries.get(subject);
      if (e === undefined || (e.pending === 0 && e.inFlight === 0)) {
        this.#entries.delete(subject);
        this.#principals.delete(subject);
        return true;
      }
    }
    return false;
  }

  /** The decision once `used` requests of the window are counted. */
  #decision(
    nowMs: number,
    window: number,
    used: number,
    allowed: boolean,
  ): RateLimitDecision {
    const resetMs = (window + 1) * this.#windowMs;
    return {
      allowed,
      limit: this.limit,
      remaining: Math.max(0, this.limit - used),
      reset: Math.ceil(resetMs / 1000),
      retryAfter: Math.max(1, Math.ceil((resetMs - nowMs) / 1000)),
    };
  }

  /**
   * Merges local counts into KV and reads back the global totals of the subjects it
   * merged. Runs after any flush already in progress.
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
    const batch: Merge[] = [];
    for (const [subject, e] of this.#entries) {
      if (e.window < window) {
        this.#entries.delete(subject);
        if (isAddressSubject(subject)) this.#addresses--;
        else this.#principals.delete(subject);
        continue;
      }
      if (e.pending > 0) {
        e.inFlight = e.pending;
        e.pending = 0;
        batch.push({ subject, window: e.window, count: e.inFlight, entry: e });
      }
    }
    try {
      await mergeCounters(this.#kv, batch, (chunk) => {
        for (const { entry, count } of chunk) {
          entry.global += count;
          entry.inFlight -= count;
        }
      });
      // Only the subjects merged now: a subject with no request here since the last
      // flush decides nothing here, and reads the others' counts when it next does.
      await this.#readBack(batch);
      this.lastFlush = { merged: batch.length, readBack: batch.length };
      await this.#sweep(window);
      if (this.#failing) this.#log?.info("rate-limit merge recovered");
      this.#failing = false;
    } catch (err) {
      for (const { entry } of batch) {
        entry.pending += entry.inFlight;
        entry.inFlight = 0;
      }
      if (!this.#failing) {
        this.#log?.warn("rate-limit merge failed; counting locally", { err });
      }
      this.#failing = true;
    }
  }

  async #readBack(merged: Merge[]): Promise<void> {
    // Each entry's window now: it may have moved since it was merged.
    const counters = merged.map(({ subject, entry }) => ({
      subject,
      window: entry.window,
    }));
    const totals = await readCounters(this.#kv, counters);
    merged.forEach(({ entry }, i) => {
      const total = totals[i];
      // The entry may have moved to a new window while KV answered.
      if (total === null || entry.window !== counters[i].window) return;
      entry.global = Math.max(entry.global, total);
    });
  }

  /** Deletes counters of windows before the previous one (any instance may do it). */
  async #sweep(window: number): Promise<void> {
    const below = window - 1;
    if (below <= this.#sweptBelow) return;
    if (await sweepCountersBefore(this.#kv, below)) this.#sweptBelow = below;
  }
}

const limiters = new WeakMap<AppDeps, RateLimiter>();

/**
 * The HMAC key of rate-limit subjects: derived from `TOKEN_SECRET`, so that every
 * instance sharing the secret shares the counts; a random per-process key (counts then
 * stay per instance, logged once) when the secret is unusable.
 */
function subjectKeyOf(deps: AppDeps): Uint8Array {
  if (deps.config.tokenSecret) return deriveKey(deps, SUBJECT_KEY_LABEL);
  deps.log.warn(
    "TOKEN_SECRET is unusable: rate-limit counts use a per-process key and are not shared between instances",
  );
  return crypto.getRandomValues(new Uint8Array(32));
}

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
    subjectKey: subjectKeyOf(deps),
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
