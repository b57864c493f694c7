/**
 * Stopping the process on SIGTERM or SIGINT (`main.ts`), every step bounded. After the
 * drain, when `NODE_DRAIN_S` asks for one (./drain.ts): the heartbeat stops and the
 * instance record goes, so other instances see the node as gone at once; no new session
 * is taken; every session still held ends now as `instance_lost` (an `active` one through
 * the end call's own teardown, bounded by `END_CLEANUP_TIMEOUT_MS`, with its
 * `session.ended` on the socket and its webhook event); then the requests being answered
 * get up to `HTTP_GRACE_MS` to finish; then the app closes (relayed sockets get 1001) and
 * the HTTP server is closed by its abort signal, whatever connection it still has. The
 * whole takes at most `shutdownBoundMs` past the drain: past it the process logs the
 * step that hung and exits `EXIT_SHUTDOWN_OVERRAN`. A second signal exits at once with
 * 128 + the signal's number, as a shell reports a killed process.
 *
 * Why not Deno's graceful `server.shutdown()`: it waits for every upgraded socket, and a
 * WebSocket upgrade whose client left before the handler answered (a relay that gave
 * up, a browser closed mid-handshake) never opens and never closes, so the shutdown
 * waited for it forever (issue 29); aborting the signal after it has begun throws
 * inside Deno and still never finishes. The abort alone closes such a connection.
 */
import type { AppDeps } from "../deps.ts";
import type { Config } from "../config.ts";
import { mediaHubOf } from "../media/service.ts";
import { stopHeartbeat } from "../media/presence.ts";
import { endWithWarning, moveSession, readSession } from "../sessions.ts";
import { drain, heldSessions } from "./drain.ts";

/** What the shutdown may take beyond `END_CLEANUP_TIMEOUT_MS`: KV writes, closes. */
export const SHUTDOWN_MARGIN_MS = 5_000;
/** How long the requests being answered may take to finish before the server closes. */
export const HTTP_GRACE_MS = 2_000;

type ServeHandler = (
  req: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Promise<Response>;

/** Counts the requests a handler is answering, so a shutdown can let them finish. */
export class RequestTracker {
  #answering = 0;
  #idle: Array<() => void> = [];

  /** `handler`, counted. */
  wrap(handler: ServeHandler): ServeHandler {
    return async (req, info) => {
      this.#answering++;
      try {
        return await handler(req, info);
      } finally {
        if (--this.#answering === 0) {
          for (const wake of this.#idle.splice(0)) wake();
        }
      }
    };
  }

  /** Resolves once no request is being answered. */
  idle(): Promise<void> {
    if (this.#answering === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}
/** Exit code of a shutdown that finished every step. */
export const EXIT_SHUTDOWN_CLEAN = 0;
/** Exit code of a shutdown that did not finish within `shutdownBoundMs`. */
export const EXIT_SHUTDOWN_OVERRAN = 1;

/** Exit code at a second signal: 128 + its number (130 for SIGINT, 143 for SIGTERM). */
export function secondSignalExitCode(signal: Deno.Signal): number {
  return signal === "SIGINT" ? 130 : 143;
}

/** How long a shutdown may take past the drain: `END_CLEANUP_TIMEOUT_MS` + the margin. */
export function shutdownBoundMs(
  config: Pick<Config, "endCleanupTimeoutMs">,
): number {
  return config.endCleanupTimeoutMs + SHUTDOWN_MARGIN_MS;
}

/** The warning of a session ended because its instance shut down. */
export const SHUTDOWN_WARNING = "the instance holding the session shut down";

/** What a shutdown stops. */
export interface ShutdownParts {
  deps: AppDeps;
  /** The HTTP server (`Deno.serve`'s) and the requests it is answering. */
  server: { finished: Promise<void> };
  requests: RequestTracker;
  /** Aborts the signal the server was started with. */
  abortServer(): void;
  /** Closes the app: its `onClose` hooks, then KV. */
  close(): Promise<void>;
  /** Flushes the log and ends the process with `code`. */
  exit(code: number): void;
}

/**
 * Ends every session this instance holds as `instance_lost`: `active` ones through the
 * end call (teardown, `session.ended`, webhook), `created` and `activating` ones failed.
 * Resolves with the ids it moved.
 */
export async function endHeldSessions(deps: AppDeps): Promise<string[]> {
  const hub = mediaHubOf(deps);
  const ids = [...new Set([...deps.vault.ids(), ...hub.live.keys()])];
  const moved: string[] = [];
  await Promise.all(ids.map(async (id) => {
    try {
      const session = await readSession(deps, id);
      if (!session || session.owner !== deps.instanceId) return;
      if (session.status === "active") {
        if (
          await endWithWarning(deps, id, "instance_lost", SHUTDOWN_WARNING)
        ) moved.push(id);
      } else if (
        session.status === "created" || session.status === "activating"
      ) {
        const r = await moveSession(deps, id, {
          from: ["created", "activating"],
          to: "failed",
          reason: "instance_lost",
        });
        if (r.ok) moved.push(id);
      }
    } catch (err) {
      deps.log.error("could not end a session at shutdown", {
        session_id: id,
        err,
      });
    }
  }));
  return moved;
}

/** Resolves once no request is being answered, or after `HTTP_GRACE_MS`. */
async function requestsDone(requests: RequestTracker): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    requests.idle(),
    new Promise<void>((r) => timer = setTimeout(r, HTTP_GRACE_MS)),
  ]);
  clearTimeout(timer);
}

/**
 * The signal handler of `main.ts`: the first signal starts the shutdown (see the module
 * doc), a second one exits at once.
 */
export function shutdownOnSignal(
  parts: ShutdownParts,
): (signal: Deno.Signal) => void {
  const { deps } = parts;
  const log = deps.log;
  let started = false;
  let exited = false;
  const exit = (code: number) => {
    if (exited) return;
    exited = true;
    parts.exit(code);
  };
  const run = async (signal: Deno.Signal) => {
    const bound = shutdownBoundMs(deps.config);
    const { drainS, role } = deps.config;
    log.info("shutting down", {
      signal,
      drain_s: role === "control" ? 0 : drainS,
      bound_ms: bound,
    });
    if (drainS > 0 && role !== "control") {
      const left = await drain(deps, drainS * 1000);
      log.info("drain over", { sessions_left: left });
    }
    let step = "sessions";
    const deadline = setTimeout(() => {
      log.error("shutdown did not finish in time: exiting", {
        step,
        bound_ms: bound,
      });
      exit(EXIT_SHUTDOWN_OVERRAN);
    }, bound);
    // First, so the node is seen as gone while its sessions end.
    const heartbeat = stopHeartbeat(deps);
    deps.draining = true;
    const held = heldSessions(deps);
    const ended = await endHeldSessions(deps);
    step = "heartbeat";
    await heartbeat;
    step = "requests";
    await requestsDone(parts.requests);
    step = "app";
    await parts.close();
    step = "http server";
    parts.abortServer();
    await parts.server.finished;
    clearTimeout(deadline);
    log.info("shut down", {
      sessions_held: held,
      sessions_ended: ended.length,
    });
    exit(EXIT_SHUTDOWN_CLEAN);
  };
  return (signal) => {
    if (started) {
      log.error("second signal: exiting at once", { signal });
      exit(secondSignalExitCode(signal));
      return;
    }
    started = true;
    run(signal).catch((err) => {
      log.error("shutdown failed", { err });
      exit(EXIT_SHUTDOWN_OVERRAN);
    });
  };
}
