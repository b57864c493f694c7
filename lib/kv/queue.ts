/**
 * The app's one Deno KV queue listener. Every subsystem that needs durable background
 * work enqueues `{kind, ...}` messages and registers a handler for its `kind`; one
 * `kv.listenQueue` per app instance dispatches them. A message is acknowledged when its
 * handler returns and redelivered by KV (with the enqueue's backoff) when it throws, so
 * handlers must be idempotent.
 */
import type { Logger } from "../log.ts";

/**
 * What the queue needs of the app's dependencies (`AppDeps` has it): named here rather
 * than imported, so this infrastructure module knows nothing of the app above it.
 */
export interface QueueDeps {
  kv: Deno.Kv;
  log: Logger;
  /** Runs when the app closes; the queue stops its listener there. */
  onClose: Array<() => void | Promise<void>>;
}

/** A queued message: `kind` picks the handler, the other fields are the handler's. */
export interface QueueMessage {
  kind: string;
  [field: string]: unknown;
}

export type QueueHandler = (msg: QueueMessage) => Promise<void> | void;

interface QueueState {
  handlers: Map<string, QueueHandler>;
  started: boolean;
  stopping: boolean;
  inflight: Set<Promise<void>>;
  abort: AbortController;
}

const states = new WeakMap<QueueDeps, QueueState>();

function stateOf(deps: QueueDeps): QueueState {
  let state = states.get(deps);
  if (!state) {
    state = {
      handlers: new Map(),
      started: false,
      stopping: false,
      inflight: new Set(),
      abort: new AbortController(),
    };
    states.set(deps, state);
  }
  return state;
}

/** True when `value` looks like a message this module dispatches. */
export function isQueueMessage(value: unknown): value is QueueMessage {
  return typeof value === "object" && value !== null &&
    typeof (value as { kind?: unknown }).kind === "string";
}

/**
 * Registers the handler for messages of `kind` on this app instance. One handler per
 * kind; registering a kind twice is a programming error and throws.
 */
export function registerQueueHandler(
  deps: QueueDeps,
  kind: string,
  fn: QueueHandler,
): void {
  const state = stateOf(deps);
  if (state.handlers.has(kind)) {
    throw new Error(`queue handler for "${kind}" is already registered`);
  }
  state.handlers.set(kind, fn);
}

/**
 * Aborted when the app starts closing: handlers pass it to their outbound calls so
 * shutdown does not wait on a slow peer.
 */
export function queueShutdownSignal(deps: QueueDeps): AbortSignal {
  return stateOf(deps).abort.signal;
}

async function dispatch(
  deps: QueueDeps,
  state: QueueState,
  raw: unknown,
): Promise<void> {
  if (!isQueueMessage(raw)) {
    deps.log.warn("queue message without a kind dropped");
    return;
  }
  if (state.stopping) {
    // Unacknowledged, so KV hands it to the next listener (or this file's next opener).
    throw new Error("queue is stopping");
  }
  const handler = state.handlers.get(raw.kind);
  if (!handler) {
    deps.log.warn("queue message of unknown kind", { kind: raw.kind });
    throw new Error(`no queue handler for "${raw.kind}"`);
  }
  try {
    await handler(raw);
  } catch (err) {
    if (state.stopping) {
      deps.log.info("queue handler interrupted by shutdown; KV redelivers", {
        kind: raw.kind,
      });
      throw err;
    }
    deps.log.error("queue handler failed", {
      kind: raw.kind,
      err: err instanceof Error
        ? { name: err.name, message: err.message }
        : String(err),
    });
    throw err;
  }
}

/**
 * Starts the instance's queue listener (idempotent). On close it stops taking
 * messages, aborts `queueShutdownSignal`, and waits for running handlers, before KV
 * closes (which ends the listener).
 */
export function startQueue(deps: QueueDeps): void {
  const state = stateOf(deps);
  if (state.started) return;
  state.started = true;
  const listening = deps.kv.listenQueue((raw: unknown) => {
    const p = dispatch(deps, state, raw);
    const tracked = p.catch(() => {}).finally(() =>
      state.inflight.delete(tracked)
    );
    state.inflight.add(tracked);
    return p;
  });
  listening.catch((err) => {
    if (!state.stopping) deps.log.error("queue listener stopped", { err });
  });
  deps.onClose.push(async () => {
    state.stopping = true;
    state.abort.abort();
    await Promise.allSettled([...state.inflight]);
  });
}
