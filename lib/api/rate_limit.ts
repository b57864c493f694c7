/**
 * Request rate limits (DECISIONS 9, SPEC 8): a fixed 60-s window per subject (per
 * credential, or per client address when none was sent: `rateLimitSubject`), plus one window
 * per client address for failed authentications (`failedAuthSubject`), shared by every
 * instance through KV without a KV write per request. Each instance counts locally and
 * merges its counts into KV in batches (atomic `sum` on a per-window key), reading the
 * global totals back in the same flush. One instance is exact; several may overshoot by
 * at most what they admit between two merges.
 *
 * KV's `sum` keeps no expiry (a sum even clears the expiry of the key it adds to), so
 * the flush also sweeps the keys of windows older than the previous one.
 */
import { createHash, type Hash } from "node:crypto";
import { type PresentedKey, presentKey } from "../auth/api_keys.ts";
import type { AppDeps } from "../deps.ts";
import type { Logger } from "../log.ts";
import { deriveKey } from "../auth/tokens.ts";

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

/** Label of the key derived from `TOKEN_SECRET` for rate-limit subjects. */
const SUBJECT_KEY_LABEL = "rate-limit-subject";

const SHA256_BLOCK = 64;

/**
 * HMAC-SHA256 (RFC 2104) under one key, with the key's padded blocks hashed once: each
 * MAC then costs two copies of a hash state and two short hashes (~3 µs here), where
 * `createHmac` costs 6–9 µs, as it sets the key up on every call.
 */
export class SubjectMac {
  readonly #inner: Hash;
  readonly #outer: Hash;

  constructor(key: Uint8Array) {
    const k = key.length > SHA256_BLOCK
      ? new Uint8Array(createHash("sha256").update(key).digest())
      : key;
    const ipad = new Uint8Array(SHA256_BLOCK).fill(0x36);
    const opad = new Uint8Array(SHA256_BLOCK).fill(0x5c);
    k.forEach((b, i) => {
      ipad[i] ^= b;
      opad[i] ^= b;
    });
    this.#inner = createHash("sha256").update(ipad);
    this.#outer = createHash("sha256").update(opad);
  }

  /** `kind:` + hex HMAC-SHA256 of `kind \0 value`. */
  subject(kind: "a" | "c" | "f", value: string): string {
    const inner = this.#inner.copy().update(kind + "\0" + value).digest();
    return kind + ":" + this.#outer.copy().update(inner).digest("hex");
  }
}

/**
 * The subject a request is counted against:
 *
 * - a key-shaped credential (`k:`): the key id and the first 22 characters (132 bits) of
 *   the SHA-256 of its secret, which authentication computes anyway (`key`). A key's
 *   secret is 256 random bits, so the hash gives nothing away, and KV holds the whole
 *   hash in the key's record already. Only who holds the secret can spend a key's
 *   window: a made-up secret under a known key id is a subject of its own;
 * - any other credential (`c:`): an HMAC-SHA256 under `mac`'s key (such a credential may
 *   be weak, as `ADMIN_API_KEY` can be, so no plain hash of it may reach KV);
 * - no credential: an HMAC of the client address (`a:`).
 *
 * Neither the credential nor the address is kept.
 */
export function rateLimitSubject(
  mac: SubjectMac,
  credential: string | null,
  remoteAddr: string,
  key: PresentedKey | null = credential === null
    ? null
    : presentKey(credential),
): string {
  if (key !== null) return "k:" + key.keyId + ":" + key.secretHash.slice(0, 22);
  return credential !== null
    ? mac.subject("c", credential)
    : mac.subject("a", remoteAddr);
}

/** The subject failed authentications from `remoteAddr` are counted against (`f:`). */
export function failedAuthSubject(mac: SubjectMac, remoteAddr: string): string {
  return mac.subject("f", remoteAddr);
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
  /** HMAC key of subjects (`subjectOf`), at least 32 bytes; random when omitted. */
  subjectKey?: Uint8Array;
}

/** Local counters of one instance, merged into KV by `flush()`. */
export class RateLimiter {
  readonly limit: number;
  readonly #kv: Deno.Kv;
  readonly #now: () => number;
  readonly #log?: Logger;
  readonly #windowMs: number;
  readonly #mac: SubjectMac;
  readonly #entries = new Map<string, Entry>();
  /** Client address → its failure subject, for addresses with failures counted here. */
  readonly #failureSubjects = new Map<string, string>();
  #running: Promise<void> | null = null;
  #sweptBelow = 0;
  #failing = false;

  constructor(options: RateLimiterOptions) {
    this.limit = options.limit;
    this.#kv = options.kv;
    this.#now = options.now;
    this.#log = options.log;
    this.#windowMs = options.windowMs ?? RATE_LIMIT_WINDOW_MS;
    this.#mac = new SubjectMac(
      options.subjectKey ?? crypto.getRandomValues(new Uint8Array(32)),
    );
  }

  /** `rateLimitSubject` under this limiter's key. */
  subjectOf(
    credential: string | null,
    remoteAddr: string,
    key?: PresentedKey | null,
  ): string {
    return rateLimitSubject(this.#mac, credential, remoteAddr, key);
  }

  /**
   * The refusal when `remoteAddr`'s failed-authentication window is spent, else null.
   * Costs a map lookup (no MAC) for an address with no failure counted here; an
   * address whose failures were all counted by other instances is seen once this
   * instance counts one of its own and merges.
   */
  failuresSpent(remoteAddr: string): RateLimitDecision | null {
    const subject = this.#failureSubjects.get(remoteAddr);
    if (subject === undefined) return null;
    const d = this.peek(subject);
    return d.allowed ? null : d;
  }

  /** Counts one failed authentication from `remoteAddr` (`take` on its `f:` subject). */
  countFailure(remoteAddr: string): RateLimitDecision {
    let subject = this.#failureSubjects.get(remoteAddr);
    if (subject === undefined) {
      subject = failedAuthSubject(this.#mac, remoteAddr);
      this.#failureSubjects.set(remoteAddr, subject);
    }
    return this.take(subject);
  }

  /**
   * What `take(subject)` would decide, without counting and without keeping the subject
   * (a subject never counted on this instance reads as untouched).
   */
  peek(subject: string): RateLimitDecision {
    const nowMs = this.#now();
    const window = Math.floor(nowMs / this.#windowMs);
    const e = this.#entries.get(subject);
    const used = e !== undefined && e.window === window
      ? e.global + e.inFlight + e.pending
      : 0;
    return this.#decision(nowMs, window, used, used < this.limit);
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
    const used = e.global + e.inFlight + e.pending;
    if (used >= this.limit) return this.#decision(nowMs, window, used, false);
    e.pending++;
    return this.#decision(nowMs, window, used + 1, true);
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
    for (const [addr, subject] of this.#failureSubjects) {
      if (!this.#entries.has(subject)) this.#failureSubjects.delete(addr);
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
