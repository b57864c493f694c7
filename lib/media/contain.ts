/**
 * Containment for the media plane: every handler that runs on an event from outside (a
 * browser socket, an engine, the renderer, a relay, a timer) goes through `contain`, so a
 * throw or a rejected promise inside it is logged through the redacting logger and ends
 * at most the one session it belongs to — never the process.
 */
import type { EndReason } from "../api/schemas.ts";
import type { Logger } from "../log.ts";

/** Where a contained failure came from; the session ends as a failure of that kind. */
export type FailureSource = "socket" | "provider" | "render" | "relay" | "hub";

/** What a contained throw of each source ends a live session as (what failed, why). */
export const CONTAINED: Record<
  FailureSource,
  [what: string, reason: EndReason]
> = {
  provider: ["conversation engine", "provider_failed"],
  render: ["renderer", "render_failed"],
  socket: ["media socket", "instance_lost"],
  relay: ["media socket", "instance_lost"],
  hub: ["media socket", "instance_lost"],
};

/** What to do when a contained handler throws: end that session (or that relay). */
export type OnThrow = (source: FailureSource, err: unknown) => void;

/** Whether `v` is a promise-like value whose rejection must be caught. */
function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === "object" && v !== null &&
    typeof (v as { then?: unknown }).then === "function";
}

/**
 * Wraps `fn` so that a throw, or a rejection of the promise it returns, is logged as
 * `what` and handed to `onThrow` (itself guarded: a throwing `onThrow` is only logged).
 * The wrapper never throws and returns nothing.
 */
export function contain<A extends unknown[]>(
  log: Logger,
  source: FailureSource,
  what: string,
  onThrow: OnThrow,
  fn: (...args: A) => unknown,
): (...args: A) => void {
  const failed = (err: unknown) => {
    log.error(`${what} failed`, { source, err });
    try {
      onThrow(source, err);
    } catch (again) {
      log.error("containment handler failed", { source, err: again });
    }
  };
  return (...args: A) => {
    try {
      const out = fn(...args);
      if (isThenable(out)) out.then(undefined, failed);
    } catch (err) {
      failed(err);
    }
  };
}

/**
 * `handlers` with every function property wrapped by `contain` (named `what.<key>`), for
 * callback objects handed to an engine or a renderer.
 */
export function containAll<T extends object>(
  log: Logger,
  source: FailureSource,
  what: string,
  onThrow: OnThrow,
  handlers: T,
): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(handlers)) {
    out[key] = typeof value === "function"
      ? contain(log, source, `${what}.${key}`, onThrow, value.bind(handlers))
      : value;
  }
  return out as T;
}

/** The socket events the media plane listens to. */
export interface SocketHandlers {
  message?: (ev: MessageEvent) => unknown;
  close?: (ev: CloseEvent) => unknown;
  error?: (ev: Event) => unknown;
  open?: (ev: Event) => unknown;
}

/** Sets `ws`'s handlers, each contained (see `contain`). */
export function bindSocket(
  ws: WebSocket,
  log: Logger,
  what: string,
  source: FailureSource,
  onThrow: OnThrow,
  handlers: SocketHandlers,
): void {
  const wrap = <E extends Event>(name: string, fn?: (ev: E) => unknown) =>
    fn ? contain(log, source, `${what} ${name}`, onThrow, fn) : null;
  ws.onmessage = wrap("message", handlers.message);
  ws.onclose = wrap("close", handlers.close);
  ws.onerror = wrap("error", handlers.error);
  if (handlers.open) ws.onopen = wrap("open", handlers.open);
}

/**
 * How long a freshly upgraded server socket may take to open. It opens as soon as the
 * upgrade answer is written; one whose client left before the handler answered never
 * opens nor closes (Deno), and would hold what was taken for it for good.
 */
export const SOCKET_OPEN_TIMEOUT_MS = 5_000;

/**
 * Resolves true once `ws` (a freshly upgraded server socket) is open; false when it
 * closes first, or has not opened within `SOCKET_OPEN_TIMEOUT_MS` (then it is closed).
 */
export function socketOpened(ws: WebSocket): Promise<boolean> {
  if (ws.readyState === WebSocket.OPEN) return Promise.resolve(true);
  if (ws.readyState !== WebSocket.CONNECTING) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      ws.removeEventListener("open", onOpen);
      ws.removeEventListener("close", onClose);
      resolve(ok);
    };
    const onOpen = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => {
      try {
        ws.close();
      } catch { /* not closable: dropped all the same */ }
      done(false);
    }, SOCKET_OPEN_TIMEOUT_MS);
    ws.addEventListener("open", onOpen);
    ws.addEventListener("close", onClose);
  });
}
