/**
 * The conversation-engine port: what the media plane needs from a provider, whatever
 * the provider. One adapter per `provider_type` implements `EngineFactory`.
 */

export const PROVIDER_TYPES = [
  "vendor_a_realtime",
  "vendor_b",
  "external_engine",
  "vendor_c",
] as const;
export type ProviderType = typeof PROVIDER_TYPES[number];

/** Per-session provider credentials, as validated at create. Held only in the vault. */
export type ProviderCredentials =
  | { type: "vendor_a_realtime"; client_secret: string }
  | { type: "vendor_b"; access_token: string; agent_id: string }
  | {
    type: "external_engine";
    url: string;
    auth_headers: Record<string, string>;
    user_sample_rate: number;
  }
  | {
    type: "vendor_c";
    agent_id: string;
    api_key?: string;
    signed_url?: string;
  };

/** Per-turn pipeline failures of SPEC 6.2: the session survives them. */
export type TurnErrorCode = "stt_failed" | "llm_failed" | "tts_failed";

/**
 * What an engine tells the media plane. Handlers should not throw; one that does fails
 * its own session (adapters built on `EngineLink` contain it), never the process.
 */
export interface EngineEvents {
  /** The engine is ready; agent audio will come at `agentSampleRate` Hz, PCM16 mono. */
  onReady(info: { agentSampleRate: number }): void;
  onResponseStart(responseId: string): void;
  /** A chunk of the avatar's voice for the current response. */
  onAgentAudio(pcm: Int16Array, sampleRate: number): void;
  onResponseEnd(responseId: string): void;
  /**
   * `role` uses the engine's words; the media socket maps `agent` to `avatar`.
   * `audioMs`: for an agent text sent after its audio, where in the current response's
   * audio its audio begins (ms); without it, the text's audio is the audio that follows
   * it (DECISIONS 6, captions on the media timeline).
   */
  onTranscript(
    t: {
      role: "user" | "agent";
      text: string;
      final: boolean;
      audioMs?: number;
      /**
       * The agent's text of its latest turn, corrected to what was actually said
       * before an interruption: it replaces that turn's text.
       */
      correction?: boolean;
    },
  ): void;
  /** A per-turn failure (fatal false) or an engine failure that ends the session (fatal true). */
  onError(e: { code: TurnErrorCode; fatal: boolean; message: string }): void;
  /**
   * The engine connection closed; `clean` when it followed a graceful end. `code` is the
   * WebSocket close code when the engine closed the socket on its own: 1000 means it
   * ended the conversation (end reason `provider_ended`), anything else that it broke.
   */
  onClose(info: { clean: boolean; reason: string; code?: number }): void;
  /**
   * Optional: the provider detected the user speaking over the agent (barge-in) and
   * cut the current response; stop playing agent audio already buffered.
   */
  onBargeIn?(): void;
  /**
   * Optional: the engine cancelled response `responseId` (ECEP `response.cancel`, e.g.
   * on barge-in it detected): drop whatever of it is queued and not yet streamed.
   */
  onResponseCancel?(responseId: string): void;
}

/** How much of a cut response the browser was sent, for the engine's history. */
export interface ResponseCut {
  responseId: string;
  /** Milliseconds of that response's audio streamed before the cut. */
  playedMs: number;
}

/** Counters of the browser audio a connection took (in browser frames). */
export interface UserAudioStats {
  /** Frames passed on to the engine (resampled). */
  sent: number;
  /** Frames dropped because the engine socket had too much queued (a slow engine). */
  droppedBackpressure: number;
  /** Frames dropped because the browser sent faster than real time allows. */
  droppedOverRate: number;
}

/** A live engine connection for one session. */
export interface EngineConnection {
  /** Microphone audio from the browser, PCM16LE mono at `sampleRate`; adapters resample. */
  sendUserAudio(pcm: Int16Array, sampleRate: number): void;
  /** A typed user turn (ignored when `textTurns` is false). */
  sendText(text: string): void;
  /**
   * False when the engine takes no typed user turns (vendor_b): the media plane refuses
   * a browser `text` with the non-fatal `invalid_message`. Absent means true.
   */
  readonly textTurns?: boolean;
  /**
   * Cut the avatar off: the engine stops the current response. With `cut`, the engine
   * also learns which response and how much of it was streamed (ECEP `interrupt` with
   * `response_id` + `played_ms`; vendor equivalents in docs/providers.md).
   */
  interrupt(cut?: ResponseCut): void;
  /**
   * Graceful end: tell the engine the session ends and wait up to `timeoutMs` for it to
   * close. Resolves `true` when it closed in time, `false` when it had to be dropped.
   */
  end(timeoutMs: number): Promise<boolean>;
  /** Drop the connection at once (force end, failure). Idempotent. */
  close(): void;
  /** What became of the user audio so far (adapters built on `EngineLink` have it). */
  userAudioStats?(): UserAudioStats;
  /**
   * Engine frames refused so far (wrong types, unknown types, bad JSON, oversized,
   * odd-length audio; adapters built on `EngineLink` have it). See docs/providers.md.
   */
  invalidFrames?(): number;
}

export interface EngineStartOptions {
  sessionId: string;
  credentials: ProviderCredentials;
  events: EngineEvents;
  /** Aborts the connect attempt (start timeout, session ended meanwhile). */
  signal: AbortSignal;
}

/**
 * Connects the engine and resolves once the connection is open and the session start was
 * sent; readiness is reported through `events.onReady`. Rejects with `EngineStartError`.
 */
export type EngineFactory = (
  options: EngineStartOptions,
) => Promise<EngineConnection>;

/** Why an engine could not start; `kind` maps to the create/activation error codes. */
export class EngineStartError extends Error {
  constructor(
    readonly kind: "refused" | "unavailable" | "timeout" | "misconfigured",
    message: string,
  ) {
    super(message);
    this.name = "EngineStartError";
  }
}

/** What adapters need from the app (a subset of `AppDeps`, so `AppDeps` fits). */
export interface ProviderDeps {
  config: {
    allowPrivateNetworkTargets: boolean;
    providerEndpoints: {
      vendorARealtimeUrl: string;
      vendorBUrl: string;
      vendorCUrl: string;
      vendorCApiUrl: string;
    };
  };
  log: {
    debug?(msg: string, fields?: Record<string, unknown>): void;
    info(msg: string, fields?: Record<string, unknown>): void;
    warn(msg: string, fields?: Record<string, unknown>): void;
  };
  /** DNS resolver for the SSRF guard (tests stub it); the system resolver by default. */
  resolver?: (host: string) => Promise<string[]>;
  /** Bound on a WebSocket upgrade; 10 s by default. */
  connectTimeoutMs?: number;
  /** Clock (epoch ms) for playback estimates; `Date.now` by default. */
  now?: () => number;
}

/**
 * The per-turn code for a provider's error message: `stt_failed` when it names speech
 * recognition (stt, asr, speech-to-text, transcription), `tts_failed` when it names
 * speech synthesis (tts, text-to-speech, synthesis), else `llm_failed`. First match wins.
 */
export function turnErrorCodeFor(message: string): TurnErrorCode {
  if (
    /(^|[^a-z])(stt|asr)([^a-z]|$)|speech[ _-]?to[ _-]?text|transcri/i.test(
      message,
    )
  ) {
    return "stt_failed";
  }
  if (
    /(^|[^a-z])tts([^a-z]|$)|text[ _-]?to[ _-]?speech|synthes/i.test(message)
  ) {
    return "tts_failed";
  }
  return "llm_failed";
}
