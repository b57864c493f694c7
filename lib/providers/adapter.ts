/**
 * The machinery every engine adapter shares, so that an adapter module holds only its
 * wire protocol: credential narrowing, endpoint parsing, the connect (SSRF guard, timeout,
 * abort) with close bookkeeping, the protocol's first message and its log line, frame
 * checking (size caps, a schema per message type, whole audio samples) with the count of
 * invalid frames whose flood ends the session, error reporting, containment (a throw in
 * any handler, timer or `EngineEvents` callback ends this session, never the process),
 * and the `EngineConnection` around the wire: ready/done guards, user-audio admission and
 * resampling, graceful end and close.
 */
import type { z } from "zod";
import {
  base64Pcm,
  ByteBudget,
  InvalidFrameCounter,
  type InvalidReason,
  type MessageOf,
  type MessageSet,
} from "./frames.ts";
import {
  type EngineConnection,
  type EngineEvents,
  EngineStartError,
  type EngineStartOptions,
  type ProviderCredentials,
  type ProviderDeps,
  type ProviderType,
  type ResponseCut,
  type TurnErrorCode,
  turnErrorCodeFor,
} from "../ports/providers.ts";
import { bytesToPcm, StreamResampler } from "./resample.ts";
import { UserAudioGate } from "./user_audio.ts";
import { CloseTracker, gracefulEnd } from "./link_close.ts";
import { containEvents, errorName } from "./contain.ts";
import { connectWs, type WsClient } from "./ws_client.ts";

export {
  MAX_ENGINE_BUFFERED_BYTES,
  USER_AUDIO_BURST_MS,
  USER_AUDIO_MAX_SPEED,
} from "./user_audio.ts";

export type Json = Record<string, unknown>;

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
export function errorText(
  v: string | null | undefined,
  fallback = "provider error",
): string {
  return v ? v.slice(0, 500) : fallback;
}

/** What an adapter plugs into `EngineLink.open`: its endpoint and its wire protocol. */
export interface WireProtocol<
  S extends Record<string, z.ZodType>,
  K extends string = "type",
> {
  url: URL;
  /** Upgrade headers (credentials: never logged, never in an error). */
  headers?: Record<string, string>;
  /** A customer-supplied target: SSRF-check it (operator endpoints are trusted). */
  guard?: boolean;
  /** The protocol's first message, sent as soon as the socket is open. */
  hello: Json;
  /** The engine's text messages: a schema per message type. */
  messages: MessageSet<S, K>;
  /** A text frame that passed its type's schema. */
  onMessage(msg: MessageOf<S, K>): void;
  /**
   * A frame of known `type` that broke its schema, called before it is counted invalid
   * (an adapter may fail the session, e.g. a malformed readiness message).
   */
  onMalformed?(type: string): void;
  /** A binary frame of whole PCM16LE samples; without it, binary frames are invalid. */
  onAudio?(pcm: Int16Array): void;
  /** User audio, already resampled to the link's user rate; never empty. */
  sendAudio(pcm: Int16Array): void;
  /**
   * A typed user turn; called only when ready and open. Absent: the protocol has no
   * typed turns (the connection's `textTurns` is false).
   */
  sendText?(text: string): void;
  /** Cut the current response; called only while open. */
  interrupt(cut?: ResponseCut): void;
  /** The graceful-end message; without one, `end()` starts the close handshake. */
  endMessage?: Json;
}

/**
 * One adapter connection in the making: owns the socket, the close bookkeeping
 * (`onClose` at most once, never after the caller's own `close()`), the ready state, the
 * agent and user audio rates, the invalid-frame count and the adapter's timers. An
 * adapter creates it, reads and sends through it from its message handlers, and gets its
 * `EngineConnection` from `open`. Everything the engine or the media plane can make
 * throw runs contained: the throw fails this session (fatal `onError`, unclean
 * `onClose`, socket dropped) and goes no further.
 */
export class EngineLink {
  /** True once the engine said it is ready (see `markReady`). */
  ready = false;
  /** The agent audio rate announced with readiness. */
  agentRate = 0;
  /** The media plane's callbacks, contained. */
  readonly events: EngineEvents;
  readonly #tracker: CloseTracker;
  #resampler: StreamResampler;
  #client: WsClient | null = null;
  readonly #audio: UserAudioGate;
  readonly #invalid: InvalidFrameCounter;
  readonly #bytes: ByteBudget;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #faulted = false;

  constructor(
    private readonly deps: ProviderDeps,
    private readonly options: EngineStartOptions,
    /** The provider name of the log lines. */
    private readonly provider: string,
    /** The rate user audio is resampled to; `markReady` may change it. */
    userRate: number,
  ) {
    this.events = containEvents(
      options.events,
      (where, err) => this.#fault(where, err),
    );
    this.#tracker = new CloseTracker((info) => this.events.onClose(info));
    this.#resampler = new StreamResampler(userRate);
    const now = deps.now ?? Date.now;
    this.#invalid = new InvalidFrameCounter(now);
    this.#bytes = new ByteBudget(now);
    this.#audio = new UserAudioGate(
      now,
      (reason) => this.#warn("user audio dropped", { reason }),
    );
  }

  #warn(msg: string, fields: Record<string, unknown> = {}): void {
    this.deps.log.warn(msg, {
      provider: this.provider,
      session_id: this.options.sessionId,
      ...fields,
    });
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
    this.#dispose();
    const code = opts.code ?? turnErrorCodeFor(message);
    this.events.onError({ code, fatal: true, message });
    this.#tracker.report(false, reason);
    this.#client?.close(1011, opts.closeReason ?? reason);
  }

  /**
   * The engine ended the conversation itself (e.g. its time limit): reported as the
   * engine's normal close (end reason `provider_ended`), and the socket is closed.
   */
  conversationOver(reason: string): void {
    this.#dispose();
    this.#tracker.report(false, reason, 1000);
    this.#client?.close(1000, "conversation over");
  }

  /**
   * Counts a frame that was not used (`reason` and the known `type` are logged, at most
   * one line per `INVALID_FRAME_LOG_INTERVAL_MS`; the frame's content never is); past
   * `INVALID_FRAME_LIMIT` in `INVALID_FRAME_WINDOW_MS` the session fails.
   */
  invalid(reason: InvalidReason, type?: string): void {
    if (this.#tracker.done) return;
    const { flood, log } = this.#invalid.record();
    if (log) {
      this.#warn("engine sent an invalid frame", {
        reason,
        type,
        invalid_frames: this.#invalid.total,
        unlogged: log.suppressed,
      });
    }
    if (flood) {
      this.#warn("engine sent a flood of invalid frames", {
        invalid_frames: this.#invalid.total,
      });
      this.fail("engine sent too many invalid frames", "invalid frames", {
        code: "llm_failed",
      });
    }
  }

  /** Samples of a base64 audio field, or null (counted invalid) when unusable. */
  base64Audio(b64: string): Int16Array | null {
    const pcm = base64Pcm(b64);
    if (!pcm) this.invalid("bad base64 audio");
    return pcm;
  }

  /**
   * Runs `fn` after `ms`, contained; cancelled when the connection ends (nothing is
   * scheduled once it is ending). Returns the cancel function.
   */
  later(fn: () => void, ms: number): () => void {
    if (this.#tracker.done || this.#tracker.ending) return () => {};
    const id = setTimeout(() => {
      this.#timers.delete(id);
      this.#guard("timer", fn);
    }, ms);
    this.#timers.add(id);
    return () => {
      clearTimeout(id);
      this.#timers.delete(id);
    };
  }

  #dispose(): void {
    for (const id of this.#timers) clearTimeout(id);
    this.#timers.clear();
  }

  #guard(where: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#fault(where, err);
    }
  }

  /** A handler threw: this session fails, once; the process goes on. */
  #fault(where: string, err: unknown): void {
    if (this.#faulted) return;
    this.#faulted = true;
    this.#warn("engine handler failed", { where, error: errorName(err) });
    if (this.#tracker.done) {
      this.#dispose();
      this.#client?.close(1011, "adapter fault");
      return;
    }
    this.fail("engine connection failed", "adapter fault", {
      code: "llm_failed",
    });
  }

  #onFrame<S extends Record<string, z.ZodType>, K extends string>(
    wire: WireProtocol<S, K>,
    data: string | Uint8Array,
  ): void {
    if (this.#tracker.done) return;
    if (!this.#bytes.take(data.length)) {
      return this.invalid("over the byte rate");
    }
    if (typeof data !== "string") {
      if (!wire.onAudio) return this.invalid("unexpected binary frame");
      if (data.length % 2 !== 0) return this.invalid("odd-length audio");
      return wire.onAudio(bytesToPcm(data));
    }
    const d = wire.messages.decode(data);
    if (d.ok) return wire.onMessage(d.msg);
    if (d.ignored) return;
    if (d.type !== undefined) wire.onMalformed?.(d.type);
    this.invalid(d.reason, d.type);
  }

  /**
   * Connects to `wire.url`, sends `wire.hello`, and resolves with the connection.
   * Rejects with `EngineStartError` (see `connectWs`).
   */
  async open<S extends Record<string, z.ZodType>, K extends string>(
    wire: WireProtocol<S, K>,
  ): Promise<EngineConnection> {
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
      onMessage: (data) => this.#onFrame(wire, data),
      onOversized: (kind) =>
        this.invalid(
          kind === "text" ? "oversized text frame" : "oversized binary frame",
        ),
      onClose: (info) => {
        this.#dispose();
        tracker.socketClosed(info.code);
      },
      onFault: (err) => this.#fault("socket handler", err),
    });
    this.#client = client;
    client.sendJson(wire.hello);
    deps.log.info("engine connected", {
      provider: this.provider,
      session_id: options.sessionId,
    });

    const guarded = <A extends unknown[]>(
      where: string,
      fn: (...args: A) => void,
    ) =>
    (...args: A): void => this.#guard(where, () => fn(...args));
    return {
      sendUserAudio: guarded("sendUserAudio", (pcm, sampleRate) => {
        if (!this.ready || tracker.done || tracker.ending) return;
        if (!this.#audio.admit(pcm.length, sampleRate, client.bufferedAmount)) {
          return;
        }
        const out = this.#resampler.push(pcm, sampleRate);
        if (out.length > 0) wire.sendAudio(out);
      }),
      userAudioStats: () => this.#audio.stats(),
      invalidFrames: () => this.#invalid.total,
      textTurns: wire.sendText !== undefined,
      sendText: guarded("sendText", (text: string) => {
        if (!this.ready || tracker.done) return;
        wire.sendText?.(text);
      }),
      interrupt: guarded("interrupt", (cut?: ResponseCut) => {
        if (tracker.done) return;
        wire.interrupt(cut);
      }),
      end: async (timeoutMs) => {
        this.#dispose();
        try {
          return await gracefulEnd(client, tracker, timeoutMs, wire.endMessage);
        } catch (err) {
          this.#fault("end", err);
          return false;
        }
      },
      close: guarded("close", () => {
        this.#dispose();
        tracker.callerClosed();
        client.close(1000, "session closed");
      }),
    };
  }
}
