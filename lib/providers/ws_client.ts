/**
 * The WebSocket client every engine adapter uses: Deno's `WebSocket` with custom upgrade
 * headers (`new WebSocket(url, { headers })`, non-standard but supported by Deno 2.9),
 * an SSRF check of customer-supplied targets, a connect timeout, an abort signal, failure
 * classification into `EngineStartError` kinds, and frame-size care.
 *
 * Frame sizes: Deno's client stalls ~44 ms per round trip on 4–16 KiB frames (Nagle,
 * measured, DECISIONS 9) while 1 KiB frames do not, so binary payloads are split into
 * frames of at most `maxFrameBytes` (1 KiB by default).
 *
 * Incoming frames over `maxMessageBytes` are refused before they reach `onMessage` (Deno's
 * client has no max-payload option: the frame was received, but nothing decodes it).
 * Every handler the socket calls is contained: a throw from `onMessage`, `onOversized`
 * or `onClose` goes to `onFault` and closes this socket, and never reaches the event
 * loop (where it would end the process).
 *
 * Errors never carry the URL (a signed URL holds a token in its query) or any header.
 */
import {
  assertPublicTarget,
  type Resolver,
  systemResolver,
  TargetRefusedError,
} from "../net_guard.ts";
import { MAX_ENGINE_FRAME_BYTES } from "./frames.ts";
import { EngineStartError } from "../ports/providers.ts";

/**
 * Deno's constructor takes options with upgrade headers (non-standard); the DOM typings
 * the project also loads only know the protocols form.
 */
type DenoWebSocketCtor = new (
  url: string | URL,
  options: { headers?: HeadersInit; protocols?: string | string[] },
) => WebSocket;
const DenoWebSocket = WebSocket as unknown as DenoWebSocketCtor;

/** Binary frames at most this large avoid the Nagle stall of Deno's client. */
export const DEFAULT_MAX_FRAME_BYTES = 1024;

export interface WsCloseInfo {
  code: number;
  reason: string;
  /** True when the peer closed first (not `close()`/`closeGracefully()` of this side). */
  byPeer: boolean;
}

export interface WsConnectOptions {
  /** HTTP headers of the upgrade request (credentials: never logged, never in errors). */
  headers?: Record<string, string>;
  protocols?: string[];
  /**
   * SSRF guard for customer-supplied targets; omit for operator-configured endpoints.
   * Every resolved address must be public unless `allowPrivate`.
   */
  guard?: { allowPrivate: boolean; resolver?: Resolver };
  /** Bound on the upgrade; past it the attempt fails with kind `timeout`. */
  connectTimeoutMs: number;
  signal?: AbortSignal;
  maxFrameBytes?: number;
  /**
   * Incoming frames larger than this (text: characters, binary: bytes) go to
   * `onOversized` instead of `onMessage`; `MAX_ENGINE_FRAME_BYTES` by default.
   */
  maxMessageBytes?: number;
  /** Text frames arrive as strings, binary frames as bytes. */
  onMessage(data: string | Uint8Array): void;
  /** A frame over `maxMessageBytes`, refused undecoded; dropped silently when absent. */
  onOversized?(kind: "text" | "binary"): void;
  /** Called once when the socket closes after it was open. */
  onClose(info: WsCloseInfo): void;
  /**
   * A handler above threw (`err` is never logged by this module). The socket is closed
   * after it returns; a throw from here is dropped.
   */
  onFault?(err: unknown): void;
}

export interface WsClient {
  readonly isOpen: boolean;
  /** Bytes handed to `send` that the socket has not written yet (a slow peer's backlog). */
  readonly bufferedAmount: number;
  sendJson(value: unknown): boolean;
  /** Sends `bytes` as one or more binary frames of at most `maxFrameBytes`. */
  sendBinary(bytes: Uint8Array): boolean;
  /** Resolves true when the peer closes within `timeoutMs`; false otherwise (then drops). */
  waitForPeerClose(timeoutMs: number): Promise<boolean>;
  /** Starts the close handshake; true when it completes within `timeoutMs`. */
  closeGracefully(timeoutMs: number): Promise<boolean>;
  /** Closes at once without waiting. Idempotent. */
  close(code?: number, reason?: string): void;
}

/** Maps a failed upgrade's error message (Deno's wording) to a start-error kind. */
export function classifyConnectFailure(
  message: string,
): { kind: EngineStartError["kind"]; detail: string } {
  const status = message.match(/Invalid status code:? (\d{3})/i);
  if (status) {
    const code = Number(status[1]);
    return code >= 500
      ? { kind: "unavailable", detail: `upgrade answered HTTP ${code}` }
      : { kind: "refused", detail: `upgrade answered HTTP ${code}` };
  }
  // Over TLS, Deno retries a refused HTTP/1.1 upgrade over h2 and reports only that.
  if (/h2 alpn|stream error|protocol error/i.test(message)) {
    return { kind: "refused", detail: "upgrade refused" };
  }
  if (/tcp connect error|connection refused/i.test(message)) {
    return { kind: "refused", detail: "connection refused" };
  }
  if (/certificate|tls|handshake/i.test(message)) {
    return { kind: "refused", detail: "TLS handshake failed" };
  }
  if (/dns error|lookup|resolve/i.test(message)) {
    return { kind: "unavailable", detail: "host could not be resolved" };
  }
  return { kind: "unavailable", detail: "network error" };
}

function abortKind(reason: unknown): EngineStartError {
  if (reason instanceof EngineStartError) return reason;
  if (reason instanceof DOMException && reason.name === "TimeoutError") {
    return new EngineStartError("timeout", "connect timed out");
  }
  return new EngineStartError("unavailable", "connect aborted");
}

async function checkTarget(
  url: URL,
  guard: NonNullable<WsConnectOptions["guard"]>,
): Promise<void> {
  let dnsFailed = false;
  const base = guard.resolver ?? systemResolver;
  const resolver: Resolver = async (host) => {
    try {
      const out = await base(host);
      if (out.length === 0) dnsFailed = true;
      return out;
    } catch (err) {
      dnsFailed = true;
      throw err;
    }
  };
  try {
    await assertPublicTarget(url, {
      allowPrivate: guard.allowPrivate,
      schemes: ["wss:"],
      resolver,
    });
  } catch (err) {
    if (err instanceof TargetRefusedError) {
      throw new EngineStartError(
        dnsFailed ? "unavailable" : "refused",
        `engine target refused: ${err.message}`,
      );
    }
    throw err;
  }
}

/**
 * Opens a WebSocket to `url`; resolves once it is open. Rejects with `EngineStartError`:
 * `refused` (connection refused, upgrade refused, TLS failure, guard refusal),
 * `unavailable` (DNS or network failure, HTTP 5xx on plain ws), `timeout`.
 */
export async function connectWs(
  url: URL,
  options: WsConnectOptions,
): Promise<WsClient> {
  if (url.protocol !== "wss:" && url.protocol !== "ws:") {
    throw new EngineStartError("misconfigured", "engine URL must be wss://");
  }
  if (options.signal?.aborted) throw abortKind(options.signal.reason);
  if (options.guard) await checkTarget(url, options.guard);
  if (options.signal?.aborted) throw abortKind(options.signal.reason);

  const maxFrame =
    Math.max(2, options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES) &
    ~1;
  let ws: WebSocket;
  try {
    ws = new DenoWebSocket(url, {
      headers: options.headers ?? {},
      protocols: options.protocols,
    });
  } catch {
    // A header the handshake refuses (never echoed: it may hold a credential).
    throw new EngineStartError(
      "misconfigured",
      "engine upgrade request is invalid",
    );
  }
  ws.binaryType = "arraybuffer";
  const maxMessage = options.maxMessageBytes ?? MAX_ENGINE_FRAME_BYTES;
  let closedByUs = false;
  const fault = (err: unknown) => {
    try {
      options.onFault?.(err);
    } catch {
      // The fault handler failed too: closing the socket below is all that is left.
    }
    drop(1000, "client fault");
  };
  ws.onmessage = (e: MessageEvent) => {
    try {
      if (typeof e.data === "string") {
        if (e.data.length > maxMessage) options.onOversized?.("text");
        else options.onMessage(e.data);
      } else if (e.data instanceof ArrayBuffer) {
        if (e.data.byteLength > maxMessage) options.onOversized?.("binary");
        else options.onMessage(new Uint8Array(e.data));
      }
    } catch (err) {
      fault(err);
    }
  };

  let openSeen = false;
  let closeResolve!: () => void;
  const closedPromise = new Promise<void>((r) => closeResolve = r);

  await new Promise<void>((resolve, reject) => {
    let failure: EngineStartError | null = null;
    const finish = (err: EngineStartError | null) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      if (err) {
        failure = err;
        // Reject only once the socket is fully closed, so nothing leaks.
        if (ws.readyState === WebSocket.CLOSED) reject(err);
        else ws.close();
      } else resolve();
    };
    const onAbort = () => finish(abortKind(options.signal?.reason));
    const timer = setTimeout(
      () => finish(new EngineStartError("timeout", "engine connect timed out")),
      options.connectTimeoutMs,
    );
    options.signal?.addEventListener("abort", onAbort, { once: true });
    ws.onopen = () => {
      if (failure) return;
      openSeen = true;
      finish(null);
    };
    ws.onerror = (e) => {
      if (openSeen || failure) return;
      const { kind, detail } = classifyConnectFailure(
        e instanceof ErrorEvent ? e.message : "",
      );
      failure = new EngineStartError(kind, `engine connect failed: ${detail}`);
    };
    ws.onclose = (e) => {
      if (!openSeen) {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        closeResolve();
        reject(
          failure ??
            new EngineStartError(
              "unavailable",
              "engine connect failed: closed before open",
            ),
        );
        return;
      }
      closeResolve();
      try {
        options.onClose({
          code: e.code,
          reason: e.reason,
          byPeer: !closedByUs,
        });
      } catch (err) {
        fault(err);
      }
    };
  });

  const isOpen = () => ws.readyState === WebSocket.OPEN;
  function drop(code = 1000, reason = "") {
    if (ws.readyState === WebSocket.CLOSED) return;
    closedByUs = true;
    // A client may only send 1000 or an application code (3000–4999).
    const safe = code === 1000 || (code >= 3000 && code <= 4999) ? code : 1000;
    if (ws.readyState !== WebSocket.CLOSING) ws.close(safe, reason);
  }
  const waitClosed = async (timeoutMs: number): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const closed = await Promise.race([
      closedPromise.then(() => true),
      new Promise<boolean>((r) =>
        timer = setTimeout(() => r(false), timeoutMs)
      ),
    ]);
    clearTimeout(timer);
    return closed;
  };

  return {
    get isOpen() {
      return isOpen();
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    sendJson(value) {
      if (!isOpen()) return false;
      ws.send(JSON.stringify(value));
      return true;
    },
    sendBinary(bytes) {
      if (!isOpen()) return false;
      for (let off = 0; off < bytes.length; off += maxFrame) {
        ws.send(bytes.subarray(off, Math.min(bytes.length, off + maxFrame)));
      }
      return true;
    },
    async waitForPeerClose(timeoutMs) {
      if (ws.readyState === WebSocket.CLOSED) return true;
      const ok = await waitClosed(timeoutMs);
      if (!ok) drop(1000, "end timeout");
      return ok;
    },
    closeGracefully(timeoutMs) {
      if (ws.readyState === WebSocket.CLOSED) return Promise.resolve(true);
      drop(1000, "session ended");
      return waitClosed(timeoutMs);
    },
    close(code = 1000, reason = "") {
      drop(code, reason);
    },
  };
}
