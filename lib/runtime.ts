/**
 * The session runtime port: what the control plane asks of the live side of a session
 * (socket, engine, renderer), wherever it runs. The media plane provides the real one;
 * `idleRuntime` is the runtime of an instance with no live media (nothing to tear down).
 */

export interface EndLiveOptions {
  /** Skip the graceful handshake and drop resources at once. */
  force: boolean;
  /** How long a graceful teardown may take before it counts as timed out. */
  timeoutMs: number;
}

export interface EndLiveResult {
  /** Set when cleanup timed out or partially failed: names what (SPEC 2.7). */
  warning?: string;
  /** Media segments sent to browsers over the session's life. */
  chunksRendered: number;
}

export interface SessionRuntime {
  /**
   * Tears down the live side of `sessionId` (which is now `ending`), wherever it is held,
   * and reports how it went. Must settle within about `timeoutMs` even when the holder
   * does not answer (then with a warning saying so).
   */
  endLive(sessionId: string, options: EndLiveOptions): Promise<EndLiveResult>;
}

/** The runtime of an instance with no live media: nothing to tear down. */
export const idleRuntime: SessionRuntime = {
  endLive: () => Promise.resolve({ chunksRendered: 0 }),
};
