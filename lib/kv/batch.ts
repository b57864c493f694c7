/**
 * Adaptive batching of KV point reads for the request path. A local KV file serves
 * reads one at a time, and a `getMany` of ten keys costs about twice one of two keys, so
 * merging the reads of concurrent requests cuts the KV cost per request while each
 * request still makes exactly one round trip:
 *
 * - when no batch is in flight, a read goes to KV at once, alone;
 * - reads that arrive while a batch is in flight wait for it and are merged, in arrival
 *   order, into the next `getMany` (at most `KV_GET_MANY_MAX` distinct keys; a key
 *   wanted by several reads is read once).
 *
 * Every read has a deadline of its own, `timeoutMs` from when it was asked (queueing
 * counts): a round trip is bounded by what is left of its oldest read's deadline, a read
 * whose deadline passed while it was queued fails without a round trip, and a failed or
 * stalled round trip fails the reads queued behind it at once (KV is then unwell; they
 * would only wait out their deadlines batch after batch). Each such read fails with 503
 * `AVTR_SESSION_STATE_UNAVAILABLE`.
 *
 * Consistency is unchanged: every `getMany` is a strongly consistent snapshot that
 * starts after each of its reads was asked for, so a read sees every write committed
 * before it was asked for. Nothing is cached between batches. Entries read once for
 * several callers are shared between them: callers treat entries as read-only.
 */
import { ApiError } from "../errors.ts";
import { KV_TIMEOUT_MS, kvTry } from "./store.ts";

/** The most keys one `kv.getMany` accepts. */
export const KV_GET_MANY_MAX = 10;

interface Waiter {
  keys: readonly Deno.KvKey[];
  /** When this read must be answered by, on the batcher's clock. */
  deadline: number;
  resolve: (entries: Deno.KvEntryMaybe<unknown>[]) => void;
  reject: (err: unknown) => void;
}

/** Counters of a batcher, for benchmarks and tests. */
export interface KvReadBatchStats {
  /** Reads asked for (`getMany` calls on the batcher). */
  reads: number;
  /** `kv.getMany` round trips made. */
  roundTrips: number;
}

/**
 * A key's identity for de-duplication within one batch, or null for keys with parts
 * (byte arrays) that are simply read once per caller.
 */
function keyId(key: Deno.KvKey): string | null {
  let id = "";
  for (const part of key) {
    switch (typeof part) {
      case "string":
        id += "s" + part.length + ":" + part;
        break;
      case "number":
        id += "n" + part + ";";
        break;
      case "bigint":
        id += "b" + part + ";";
        break;
      case "boolean":
        id += part ? "t" : "f";
        break;
      default:
        return null;
    }
  }
  return id;
}

/** Merges concurrent `getMany` reads on one KV handle (see the module doc). */
export class KvReadBatcher {
  readonly #kv: Deno.Kv;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #queue: Waiter[] = [];
  #inFlight = false;
  readonly stats: KvReadBatchStats = { reads: 0, roundTrips: 0 };

  /**
   * `timeoutMs` bounds each read from when it is asked for (`kvTry`'s default when
   * omitted); `now` is the clock deadlines are measured on (ms, monotonic).
   */
  constructor(
    kv: Deno.Kv,
    options: { timeoutMs?: number; now?: () => number } = {},
  ) {
    this.#kv = kv;
    this.#timeoutMs = options.timeoutMs ?? KV_TIMEOUT_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Reads `keys` (at most `KV_GET_MANY_MAX`) in one strongly consistent snapshot taken
   * after this call; entries come back in the order of `keys`. Rejects with 503
   * `AVTR_SESSION_STATE_UNAVAILABLE` (as `kvTry`) when KV fails or no answer came within
   * `timeoutMs` of this call (see the module doc).
   */
  getMany(keys: readonly Deno.KvKey[]): Promise<Deno.KvEntryMaybe<unknown>[]> {
    if (keys.length === 0) return Promise.resolve([]);
    if (keys.length > KV_GET_MANY_MAX) {
      // KV refuses it; let it say so, through the usual error mapping.
      return kvTry(() => this.#kv.getMany([...keys]), this.#timeoutMs);
    }
    this.stats.reads++;
    return new Promise((resolve, reject) => {
      this.#queue.push({
        keys,
        deadline: this.#now() + this.#timeoutMs,
        resolve,
        reject,
      });
      if (!this.#inFlight) this.#next();
    });
  }

  /** Sends the next batch: queued reads, in order, while their distinct keys fit. */
  #next(): void {
    const now = this.#dropExpired();
    const queue = this.#queue;
    if (queue.length === 0) {
      this.#inFlight = false;
      return;
    }
    const keys: Deno.KvKey[] = [];
    const slotOf = new Map<string, number>();
    const taken: { waiter: Waiter; slots: number[] }[] = [];
    let n = 0;
    for (; n < queue.length; n++) {
      const waiter = queue[n];
      const slots: number[] = [];
      const added: string[] = [];
      let extra = 0;
      for (const key of waiter.keys) {
        const id = keyId(key);
        const slot = id === null ? undefined : slotOf.get(id);
        if (slot !== undefined) {
          slots.push(slot);
          continue;
        }
        slots.push(keys.length + extra);
        extra++;
        if (id !== null) {
          slotOf.set(id, keys.length + extra - 1);
          added.push(id);
        }
      }
      if (keys.length + extra > KV_GET_MANY_MAX) {
        for (const id of added) slotOf.delete(id);
        break;
      }
      for (let i = 0; i < waiter.keys.length; i++) {
        if (slots[i] >= keys.length) keys[slots[i]] = waiter.keys[i];
      }
      taken.push({ waiter, slots });
    }
    this.#queue = n === queue.length ? [] : queue.slice(n);
    this.#inFlight = true;
    this.stats.roundTrips++;
    // Bounded by the earliest deadline of the batch: its first read's (deadlines grow
    // in arrival order).
    const left = taken[0].waiter.deadline - now;
    kvTry(() => this.#kv.getMany(keys), Math.max(1, Math.ceil(left))).then(
      (entries) => {
        this.#next();
        for (const { waiter, slots } of taken) {
          waiter.resolve(slots.map((s) => entries[s]));
        }
      },
      (err) => {
        // KV is failing or stalled: the reads queued behind fail now, not one batch
        // timeout after another.
        const queued = this.#queue;
        this.#queue = [];
        this.#inFlight = false;
        for (const { waiter } of taken) waiter.reject(err);
        for (const waiter of queued) waiter.reject(err);
      },
    );
  }

  /**
   * Rejects queued reads whose deadline has passed: they get no round trip. Deadlines
   * grow in arrival order, so the expired reads are a prefix of the queue. Returns the
   * time it went by.
   */
  #dropExpired(): number {
    const now = this.#now();
    let n = 0;
    while (n < this.#queue.length && this.#queue[n].deadline <= now) n++;
    if (n === 0) return now;
    const expired = this.#queue.slice(0, n);
    this.#queue = this.#queue.slice(n);
    const err = new ApiError(
      "AVTR_SESSION_STATE_UNAVAILABLE",
      "Session state is temporarily unavailable",
      { cause: new Error(`KV read waited over ${this.#timeoutMs} ms`) },
    );
    for (const waiter of expired) waiter.reject(err);
    return now;
  }
}

const batchers = new WeakMap<Deno.Kv, KvReadBatcher>();

/** The read batcher of `kv` (one per KV handle, made on first use). */
export function kvReadBatcher(kv: Deno.Kv): KvReadBatcher {
  let b = batchers.get(kv);
  if (b === undefined) {
    b = new KvReadBatcher(kv);
    batchers.set(kv, b);
  }
  return b;
}
