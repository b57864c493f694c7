/**
 * Close bookkeeping of an engine connection and its graceful end.
 */
import type { EngineEvents } from "../ports/providers.ts";
import type { WsClient } from "./ws_client.ts";

/** Close bookkeeping: `onClose` fires at most once, and never after the caller's `close()`. */
export class CloseTracker {
  #reported = false;
  #byCaller = false;
  /** Set while a graceful end waits; the socket's close is then reported by the end. */
  ending = false;

  constructor(private readonly onClose: EngineEvents["onClose"]) {}

  /** True once the connection is over, either way. */
  get done(): boolean {
    return this.#reported || this.#byCaller;
  }

  report(clean: boolean, reason: string, code?: number): void {
    if (this.done) return;
    this.#reported = true;
    this.onClose(
      code === undefined ? { clean, reason } : { clean, reason, code },
    );
  }

  /**
   * The socket closed with `code`: unclean unless a graceful end is waiting for exactly
   * this (the code tells a normal close, 1000, from a broken one).
   */
  socketClosed(code: number): void {
    if (!this.ending) this.report(false, "engine closed the connection", code);
  }

  callerClosed(): void {
    this.#byCaller = true;
  }
}

/**
 * A graceful end: send `endMessage` and wait for the peer to close, or (no message in the
 * protocol) start the close handshake; either way bounded by `timeoutMs`, then dropped.
 */
export async function gracefulEnd(
  client: WsClient,
  tracker: CloseTracker,
  timeoutMs: number,
  endMessage?: unknown,
): Promise<boolean> {
  if (tracker.done) return true;
  tracker.ending = true;
  let ok: boolean;
  if (endMessage !== undefined && client.sendJson(endMessage)) {
    ok = await client.waitForPeerClose(timeoutMs);
  } else {
    ok = await client.closeGracefully(timeoutMs);
  }
  tracker.report(ok, ok ? "ended" : "engine did not close in time");
  return ok;
}
