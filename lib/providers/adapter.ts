/**
 * The machinery every engine adapter shares, so that an adapter module holds only its
 * wire protocol: credential narrowing, endpoint parsing, the connect (SSRF guard, timeout,
 * abort) with close bookkeeping, the protocol's first message and its log line, JSON
 * event parsing, error reporting, and the `EngineConnection` around the wire: ready/done
 * guards, user-audio admission (backpressure and a real-time rate cap) and resampling,
 * graceful end and close.
 */
import {
  type EngineConnection,
  type EngineEvents,
  EngineStartError,
  type EngineStartOptions,
  type ProviderCredentials,
  type ProviderDeps,
  type ProviderType,
  type TurnErrorCode,
  turnErrorCodeFor,
  type UserAudioStats,
} from "./port.ts";
import { StreamResampler } from "./resample.ts";
import { connectWs, type WsClient } from "./ws_client.ts";

export type Json = Record<string, unknown>;

/**
 * Bytes the engine socket may have queued (written by us, not yet taken by the engine)
 * before user audio is dropped instead of queued: a slow engine costs at most this much
 * memory per session, not whatever the browser sends.
 */
export const MAX_ENGINE_BUFFERED_BYTES = 1024 * 1024;
/** User audio may arrive at most this many times faster than real time, sustained. */
export const USER_AUDIO_MAX_SPEED = 2;
/** Audio (ms, at the browser's declared rate) accepted at once above that speed. */
export const USER_AUDIO_BURST_MS = 5000;

/** `v` when it is a string, else "". */
export const str = (v: unknown): string => typeof v === "string" ? v : "";

/** `v` when it is an object, else an empty one. */
export const obj = (v: unknown): Json =>
  v && typeof v === "object" ? v as Json : {};

/** `credentials` narrowed to `type`; any other type is a misconfiguration. */
export function credentialsFor<T extends ProviderType>(
  credentials: ProviderCredentials,
  type: T,
): Extract<ProviderCredentials, { type: T }> {
  if (credentials.type !== type) {
    throw new EngineStartError("misconfigured", "credentials mismatch");
  }
  return credentials as Extract<ProviderCredentials, { type: T }>;
}

/** `raw` as a URL; an unparsable one is a misconfiguration saying `message` (never the URL). */
export function parseUrl(raw: string, message: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new EngineStartError("misconfigured", message);
  }
}

/** A provider's error text cut to 500 characters, or `fallback` when it has none. */
export function errorText(v: unknown, fallback = "provider error"): string {
  return str(v).slice(0, 500) || fallback;
}

/** What an adapter plugs into `EngineLink.open`: its endpoint and its wire protocol. */
export interface WireProtocol {
  url: URL;
  /** Upgrade headers (credentials: never logged, never in an error). */
  headers?: Record<string, string>;
  /** A customer-supplied target: SSRF-check it (operator endpoints are trusted). */
  guard?: boolean;
  /** The protocol's first message, sent as soon as the socket is open. */
  hello: Json;
  /** A text frame holding a JSON object. */
  onEvent(ev: Json): void;
  /** A text frame that is not a JSON object; ignored when absent. */
  onInvalidText?(): void;
  /** A binary frame; ignored when absent. */
  onBinary?(bytes: Uint8Array): void;
  /** User audio, already resampled to the link's user rate; never empty. */
  sendAudio(pcm: Int16Array): void;
  /** A typed user turn; called only when ready and open. */
  sendText(text: string): void;
  /** Cut the current response; called only while open. */
  interrupt(): void;
  /** The graceful-end message; without one, `end()` starts the close handshake. */
  endMessage?: Json;
  /** Stops the adapter's own timers; called when the connection ends, either way. */
  dispose?(): void;
}

/**
 * One adapter connection in the making: owns the socket, the close bookkeeping
 * (`onClose` at most once, never after the caller's own `close()`), the ready state and
 * the agent and user audio rates. An adapter creates it, reads and sends through it from
 * its event handlers, and gets its `EngineConnection` from `open`.
 */
export class EngineLink {
  /** True once the engine said it is ready (see `markReady`). */
  ready = false;
  /** The agent audio rate announced with readiness. */
  agentRate = 0;
  readonly #tracker: CloseTracker;
  #resampler: StreamResampler;
  #client: WsClient | null = null;
  readonly #audio: UserAudioGate;

  constructor(
    private readonly deps: ProviderDeps,
    private readonly options: EngineStartOptions,
    /** The provider name of the log lines. */
    private readonly provider: string,
    /** The rate user audio is resampled to; `markReady` may change it. */
    userRate: number,
  ) {
    this.#tracker = new CloseTracker(options.events.onClose);
    this.#resampler = new StreamResampler(userRate);
    this.#audio = new UserAudioGate(
      deps.now ?? Date.now,
      (reason) =>
        deps.log.warn("user audio dropped", {
          provider,
          session_id: options.sessionId,
          reason,
        }),
    );
  }

  get events(): EngineEvents {
    return this.options.events;
  }

  /** Sends a JSON text frame; false when the socket is not open. */
  send(value: Json): boolean {
    return this.#client?.sendJson(value) ?? false;
  }

  /** Sends bytes as binary frames of at most 1 KiB; false when not open. */
  sendBinary(bytes: Uint8Array): boolean {
    return this.#client?.sendBinary(bytes) ?? false;
  }

  /** Marks the engine ready and reports it; `userRate` renegotiates the user audio rate. */
  markReady(agentRate: number, userRate?: number): void {
    if (userRate !== undefined) this.#resampler = new StreamResampler(userRate);
    this.agentRate = agentRate;
    this.ready = true;
    this.events.onReady({ agentSampleRate: agentRate });
  }

  /** A non-fatal per-turn error, its code read from `message`. */
  turnError(message: string): void {
    this.events.onError({
      code: turnErrorCodeFor(message),
      fatal: false,
      message,
    });
  }

  /**
   * A fatal error: report it (`code` read from `message` unless given), report an
   * unclean close for `reason`, and drop the socket with `closeReason` (`reason` if none).
   */
  fail(
    message: string,
    reason: string,
    opts: { code?: TurnErrorCode; closeReason?: string } = {},
  ): void {
    const code = opts.code ?? turnErrorCodeFor(message);
    this.events.onError({ code, fatal: true, message });
    this.#tracker.report(false, reason);
    this.#client?.close(1011, opts.closeReason ?? reason);
  }

  /**
   * Connects to `wire.url`, sends `wire.hello`, and resolves with the connection.
   * Rejects with `EngineStartError` (see `connectWs`).
   */
  async open(wire: WireProtocol): Promise<EngineConnection> {
    const { deps, options } = this;
    const tracker = this.#tracker;
    const client = await connectWs(wire.url, {
      headers: wire.headers,
      guard: wire.guard
        ? {
          allowPrivate: deps.config.allowPrivateNetworkTargets,
          resolver: deps.resolver,
        }
        : undefined,
      connectTimeoutMs: deps.connectTimeoutMs ?? 10_000,
      signal: options.signal,
      onMessage: (data) => {
        if (typeof data !== "string") return wire.onBinary?.(data);
        const ev = parseObject(data);
        if (ev) wire.onEvent(ev);
        else wire.onInvalidText?.();
      },
      onClose: () => {
        wire.dispose?.();
        tracker.socketClosed();
      },
    });
    this.#client = client;
    client.sendJson(wire.hello);
    deps.log.info("engine connected", {
      provider: this.provider,
      session_id: options.sessionId,
    });

    return {
      sendUserAudio: (pcm, sampleRate) => {
        if (!this.ready || tracker.done || tracker.ending) return;
        if (!this.#audio.admit(pcm.length, sampleRate, client.bufferedAmount)) {
          return;
        }
        const out = this.#resampler.push(pcm, sampleRate);
        if (out.length > 0) wire.sendAudio(out);
      },
      userAudioStats: () => this.#audio.stats(),
      sendText: (text) => {
        if (!this.ready || tracker.done) return;
        wire.sendText(text);
      },
      interrupt: () => {
        if (tracker.done) return;
        wire.interrupt();
      },
      end: (timeoutMs) => {
        wire.dispose?.();
        return gracefulEnd(client, tracker, timeoutMs, wire.endMessage);
      },
      close: () => {
        wire.dispose?.();
        tracker.callerClosed();
        client.close(1000, "session closed");
      },
    };
  }
}

/**
 * Admission of browser audio into the engine socket: a frame is dropped (and counted)
 * when the socket already holds more than `MAX_ENGINE_BUFFERED_BYTES` unsent, or when it
 * exceeds a token bucket of `USER_AUDIO_BURST_MS` refilled at `USER_AUDIO_MAX_SPEED`×
 * wall time. The first drop of each kind is reported to `onFirstDrop`.
 */
class UserAudioGate {
  #counts: UserAudioStats = {
    sent: 0,
    droppedBackpressure: 0,
    droppedOverRate: 0,
  };
  #budgetMs = USER_AUDIO_BURST_MS;
  #at: number;

  constructor(
    private readonly now: () => number,
    private readonly onFirstDrop: (reason: string) => void,
  ) {
    this.#at = now();
  }

  stats(): UserAudioStats {
    return { ...this.#counts };
  }

  /** Whether a frame of `samples` at `rate` may go to a socket holding `buffered` bytes. */
  admit(samples: number, rate: number, buffered: number): boolean {
    const now = this.now();
    this.#budgetMs = Math.min(
      USER_AUDIO_BURST_MS,
      this.#budgetMs + Math.max(0, now - this.#at) * USER_AUDIO_MAX_SPEED,
    );
    this.#at = now;
    const costMs = (samples * 1000) / rate;
    const c = this.#counts;
    if (costMs > this.#budgetMs + 1e-6) {
      if (c.droppedOverRate++ === 0) {
        this.onFirstDrop("faster than real time");
      }
      return false;
    }
    this.#budgetMs -= costMs;
    if (buffered > MAX_ENGINE_BUFFERED_BYTES) {
      if (c.droppedBackpressure++ === 0) {
        this.onFirstDrop("engine not reading");
      }
      return false;
    }
    c.sent++;
    return true;
  }
}

function parseObject(text: string): Json | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? v as Json : null;
  } catch {
    return null;
  }
}

/** Close bookkeeping: `onClose` fires at most once, and never after the caller's `close()`. */
class CloseTracker {
  #reported = false;
  #byCaller = false;
  /** Set while a graceful end waits; the socket's close is then reported by the end. */
  ending = false;

  constructor(private readonly onClose: EngineEvents["onClose"]) {}

  /** True once the connection is over, either way. */
  get done(): boolean {
    return this.#reported || this.#byCaller;
  }

  report(clean: boolean, reason: string): void {
    if (this.done) return;
    this.#reported = true;
    this.onClose({ clean, reason });
  }

  /** The socket closed: unclean unless a graceful end is waiting for exactly this. */
  socketClosed(): void {
    if (!this.ending) this.report(false, "engine closed the connection");
  }

  callerClosed(): void {
    this.#byCaller = true;
  }
}

/**
 * A graceful end: send `endMessage` and wait for the peer to close, or (no message in the
 * protocol) start the close handshake; either way bounded by `timeoutMs`, then dropped.
 */
async function gracefulEnd(
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
