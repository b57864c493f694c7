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
 * Consistency is unchanged: every `getMany` is a strongly consistent snapshot that
 * starts after each of its reads was asked for, so a read sees every write committed
 * before it was asked for. Nothing is cached between batches. Entries read once for
 * several callers are shared between them: callers treat entries as read-only.
 */
import { kvTry } from "./store.ts";

/** The most keys one `kv.getMany` accepts. */
export const KV_GET_MANY_MAX = 10;

interface Waiter {
  keys: readonly Deno.KvKey[];
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
  readonly #timeoutMs: number | undefined;
  #queue: Waiter[] = [];
  #inFlight = false;
  readonly stats: KvReadBatchStats = { reads: 0, roundTrips: 0 };

  /** `timeoutMs` bounds each round trip (`kvTry`'s default when omitted). */
  constructor(kv: Deno.Kv, options: { timeoutMs?: number } = {}) {
    this.#kv = kv;
    this.#timeoutMs = options.timeoutMs;
  }

  /**
   * Reads `keys` (at most `KV_GET_MANY_MAX`) in one strongly consistent snapshot taken
   * after this call; entries come back in the order of `keys`. A failed or stalled
   * round trip rejects every read of its batch with 503
   * `AVTR_SESSION_STATE_UNAVAILABLE` (as `kvTry`).
   */
  getMany(keys: readonly Deno.KvKey[]): Promise<Deno.KvEntryMaybe<unknown>[]> {
    if (keys.length === 0) return Promise.resolve([]);
    if (keys.length > KV_GET_MANY_MAX) {
      // KV refuses it; let it say so, through the usual error mapping.
      return kvTry(() => this.#kv.getMany([...keys]), this.#timeoutMs);
    }
    this.stats.reads++;
    return new Promise((resolve, reject) => {
      this.#queue.push({ keys, resolve, reject });
      if (!this.#inFlight) this.#next();
    });
  }

  /** Sends the next batch: queued reads, in order, while their distinct keys fit. */
  #next(): void {
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
    kvTry(() => this.#kv.getMany(keys), this.#timeoutMs).then(
      (entries) => {
        this.#next();
        for (const { waiter, slots } of taken) {
          waiter.resolve(slots.map((s) => entries[s]));
        }
      },
      (err) => {
        this.#next();
        for (const { waiter } of taken) waiter.reject(err);
      },
    );
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
