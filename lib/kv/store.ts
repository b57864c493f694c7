/**
 * Guards around the KV store: any failure or stall of the store becomes the retryable
 * 503 `AVTR_SESSION_STATE_UNAVAILABLE`, never a hang and never a 500 with a stack.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { ApiError } from "../errors.ts";

/** How long one store operation, or all of a request's together, may take. */
export const KV_TIMEOUT_MS = 5000;

/**
 * The time a request may spend waiting on the store, shared by its KV operations: each
 * `kvTry` given the budget may wait only what the earlier ones left, so a request with
 * several operations still answers within `KV_TIMEOUT_MS` of store time.
 */
export class KvBudget {
  #leftMs: number;

  constructor(ms = KV_TIMEOUT_MS) {
    this.#leftMs = ms;
  }

  /** The store time left, in ms (≤ 0 once spent). */
  get leftMs(): number {
    return this.#leftMs;
  }

  /** Counts `ms` of store time as spent. */
  spend(ms: number): void {
    this.#leftMs -= ms;
  }
}

/** The signal of the `kvTry` a write was started under: its retries stop once it aborts. */
const writeScope = new AsyncLocalStorage<AbortSignal>();

function unavailable(cause: unknown): ApiError {
  return new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "Session state is temporarily unavailable",
    { cause },
  );
}

/**
 * Awaits a KV operation. Rejections that are not already `ApiError`s, and operations
 * slower than `bound` (ms, or what is left of a request's `KvBudget`), become
 * `AVTR_SESSION_STATE_UNAVAILABLE` (the cause is kept for the log, never rendered).
 * When `op` is a function, the writes it starts retry a locked file only until the
 * bound: a write its caller was answered 503 for starts no attempt after that answer.
 * A spent budget refuses at once, without calling `op`.
 */
export async function kvTry<T>(
  op: Promise<T> | (() => Promise<T>),
  bound: number | KvBudget = KV_TIMEOUT_MS,
): Promise<T> {
  const budget = typeof bound === "number" ? undefined : bound;
  const timeoutMs = budget ? budget.leftMs : bound as number;
  if (timeoutMs <= 0) {
    // A write already started goes on (and may still fail) without a waiter.
    if (typeof op !== "function") op.catch(() => undefined);
    throw unavailable(new Error("the request's KV time is spent"));
  }
  const ctl = new AbortController();
  const started = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const p = typeof op === "function" ? writeScope.run(ctl.signal, op) : op;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new Error(`KV operation exceeded ${timeoutMs} ms`);
        ctl.abort(err);
        reject(err);
      }, timeoutMs);
    });
    return await Promise.race([p, timeout]);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw unavailable(err);
  } finally {
    clearTimeout(timer);
    budget?.spend(performance.now() - started);
  }
}

/** SQLite's answer when another process holds the write lock of a shared KV file. */
function isLocked(err: unknown): boolean {
  return err instanceof Error &&
    /database is locked|database table is locked/i.test(err.message);
}

/**
 * How long a write keeps trying while the file is locked. A bound in time, not in
 * attempts: SQLite answers "locked" at once when another process committed since this
 * transaction began reading, and on a busy machine (other processes descheduled while
 * they hold the lock, slow fsyncs) a fixed count of quick retries (60, ~0.6 s) ran out
 * under load while a wait of a second or two would have landed the write. An attempt
 * SQLite itself makes wait (its busy timeout) counts against the same bound.
 */
export const LOCK_RETRY_MS = KV_TIMEOUT_MS;

/**
 * Runs a write; while the file is locked by another process, tries again with jitter
 * for up to `LOCK_RETRY_MS`, unless the `kvTry` it was started under has given up (its
 * caller got a 503).
 */
async function retryLocked<T>(write: () => Promise<T>): Promise<T> {
  const signal = writeScope.getStore();
  const deadline = performance.now() + LOCK_RETRY_MS;
  for (let attempt = 0;; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (
        !isLocked(err) || signal?.aborted || performance.now() >= deadline
      ) {
        throw err;
      }
      await new Promise((r) =>
        setTimeout(r, 1 + Math.random() * Math.min(20, 2 + attempt))
      );
      if (signal?.aborted) throw err;
    }
  }
}

function lockRetryingAtomic(op: Deno.AtomicOperation): Deno.AtomicOperation {
  const proxy: Deno.AtomicOperation = new Proxy(op, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "commit") return () => retryLocked(() => target.commit());
      return (...args: unknown[]) => {
        const out = value.apply(target, args);
        return out === target ? proxy : out;
      };
    },
  });
  return proxy;
}

/**
 * Wraps a KV handle so that writes refused with "database is locked" — what a local KV
 * file answers while another process commits (measured: under contention most commits
 * of two processes fail that way) — are retried. A failed commit applied nothing, so
 * committing the same atomic operation again is safe; reads never fail this way.
 */
export function withLockRetry(kv: Deno.Kv): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      switch (prop) {
        case "atomic":
          return () => lockRetryingAtomic(target.atomic());
        case "set":
        case "delete":
        case "enqueue":
          return (...args: unknown[]) =>
            retryLocked(() =>
              (value as (...a: unknown[]) => Promise<unknown>).apply(
                target,
                args,
              )
            );
        default:
          return value.bind(target);
      }
    },
  });
}

/** Whether `path` names a local KV file (not `:memory:`, a URL, or the default). */
function isLocalFile(path: string | undefined): path is string {
  return !!path && path !== ":memory:" && !/^[a-z]+:\/\//i.test(path);
}

/** Opens the KV store named by `path` (`:memory:`, a file, a KV Connect URL, or the default). */
export async function openKv(path: string | undefined): Promise<Deno.Kv> {
  if (isLocalFile(path)) {
    const dir = path.replace(/\/[^/]*$/, "");
    if (dir && dir !== path) await Deno.mkdir(dir, { recursive: true });
  }
  const kv = await Deno.openKv(path);
  // A local file may be shared by several processes; other backends never answer "locked".
  return isLocalFile(path) ? withLockRetry(kv) : kv;
}

/**
 * The handle for the request path's point reads (`AppDeps.readKv`). A local KV file
 * serves each handle's operations in order, so a read on the handle that commits waits
 * for every commit queued before it, and a commit can wait long: on the file's write
 * lock while another process commits, or on a slow disk sync (measured: a read queued
 * behind a commit that waited 630 ms for the lock took 606 ms; on a second handle,
 * 0.3 ms). A second handle on the file reads from its own connection; SQLite shows a
 * read every commit finished before it began, on any connection, so the reads stay
 * strongly consistent. `:memory:` (a second handle would be another store) and remote
 * stores use `kv` itself.
 */
export async function openReadKv(
  path: string | undefined,
  kv: Deno.Kv,
): Promise<Deno.Kv> {
  return isLocalFile(path) ? await Deno.openKv(path) : kv;
}
