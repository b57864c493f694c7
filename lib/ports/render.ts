/**
 * The render port: what the media plane needs from an avatar renderer, wherever it runs
 * (in-process or on a render worker). A session renders one avatar; each `attach` starts
 * a fresh fMP4 stream (init segment, then moof+mdat segments) that a browser's
 * MediaSource can play as is (DECISIONS 6).
 */

/** Longest caption text a mark carries to a render worker (its end is what counts). */
export const MAX_MARK_TEXT = 1000;

/** Where a stream's output goes. Handlers must not throw; they decide on slow consumers. */
/**
 * The audio codec of an fMP4 stream: AAC-LC for every player, Opus for a WebCodecs
 * player that asked for it (`media.config`, DECISIONS 6: 20-ms frames, no lookahead to
 * hold back).
 */
export type AudioCodec = "aac" | "opus";

export interface RenderSink {
  /** The audio codec this viewer decodes (default `aac`). */
  readonly audio?: AudioCodec;
  /** Once per stream, first: the MIME type with codecs and the init segment (ftyp+moov). */
  onInit(mime: string, init: Uint8Array): void;
  /** One media segment (moof+mdat), in order. */
  onSegment(segment: Uint8Array): void;
  /** The stream failed; nothing more comes to this sink. */
  onError(err: Error): void;
  /**
   * Optional: the avatar's audible speech started or stopped at `mediaTimeMs` of this
   * stream (lib/render/speech.ts). Called after the segment that covers that time.
   */
  onSpeech?(event: SpeechEvent): void;
}

/** Audible agent speech starting or stopping on a stream's timeline. */
export interface SpeechEvent {
  speaking: boolean;
  /** The tag its audio was pushed with (the media plane uses the turn id). */
  tag: string | undefined;
  /**
   * Where it happens. On an fMP4 stream (`RenderSink`): presentation time, ms from the
   * stream's start. On the RTP output (`RtpSink`): the sender's wall clock, epoch ms at
   * which that sample was written to the RTP encoder (an SFU renumbers RTP timestamps
   * per viewer, so the RTP timeline itself is not visible to a browser).
   */
  mediaTimeMs: number;
  /** Set when the speech stopped because it was cut (`interrupt`). */
  cut?: { playedMs: number };
  /**
   * Set (with `speaking` false) when all the audio of the tag, which `endAudio` said is
   * complete, has gone into the stream: nothing more of it will be heard.
   */
  ended?: boolean;
  /**
   * Set when a caption mark of `markText` reached the stream: `mediaTimeMs` is where
   * the audio after it begins (`speaking` says whether the tag is being heard).
   */
  mark?: number;
}

/**
 * Where a session's RTP output reports (`publishRtp`), beside the fMP4 `RenderSink`.
 * Handlers must not throw.
 */
export interface RtpSink {
  /** The RTP output failed for good. */
  onError(err: Error): void;
  /**
   * Optional: the avatar's audible speech started or stopped (`mediaTimeMs` in epoch ms
   * on the sender's clock, see `SpeechEvent`). Called once the RTP encoder was handed
   * the audio at that time. While the RTP output runs, speech follows it (not fMP4).
   */
  onSpeech?(event: SpeechEvent): void;
}

/** What an `interrupt` cut. */
export interface SpeechCut {
  tag: string | undefined;
  /** How much of that tag's audio went into streams (ms). */
  playedMs: number;
  /** Whether it was being heard when cut. */
  wasSpeaking: boolean;
}

/** Latency of agent audio: pushed → first segment carrying it handed to a sink. */
export interface RenderStats {
  /** Milliseconds per measured push (the most recent ones, bounded). */
  audioLatencyMs: number[];
  /**
   * Agent audio refused because the queue held its bound (`MAX_AGENT_AUDIO_AHEAD_MS`,
   * samples at 48 kHz); never dropped from the queue to make room.
   */
  droppedAudioSamples: number;
  /** Agent audio waiting to be rendered (samples at 48 kHz). */
  queuedAudioSamples: number;
  /** Frames whose drawing was skipped because the renderer ran behind real time. */
  skippedDraws: number;
}

export interface RenderSession {
  /** Starts a fresh fMP4 stream to `sink` (init segment first, timestamps near 0, first fragment on a keyframe); ends any previous stream (takeover). */
  attach(sink: RenderSink): void;
  detach(): void;
  /**
   * Agent voice, PCM16 mono at sampleRate; resampled internally; drives the mouth and is
   * the audio track. `tag` names its turn for speech events and cuts. Queued whole
   * however far ahead of real time it comes, up to `MAX_AGENT_AUDIO_AHEAD_MS`
   * (./voice.ts): false when a push would go past it (that push is refused, nothing
   * queued is dropped; the caller ends the session).
   */
  pushAudio(pcm: Int16Array, sampleRate: number, tag?: string): boolean;
  /**
   * No more audio of `tag` comes: once all of it went into the stream, its speech stops
   * and a speech event with `ended` follows. Resolves true when nothing of it is queued
   * or awaited (or nobody watches): no event will follow.
   */
  endAudio(tag: string): boolean | Promise<boolean>;
  /**
   * A caption mark `id` in `tag`'s audio at `offsetMs` of it (default: after all of it
   * pushed so far): a speech event with `mark` follows where the stream reaches it. A
   * cut of `tag` drops its marks not yet reached. `text`, the caption's words, cues the
   * avatar's head by its punctuation (a question, a phrase's end) where it is heard.
   */
  markText(tag: string, id: number, offsetMs?: number, text?: string): void;
  /**
   * Whether the user is speaking now (heard on the microphone): the avatar listens
   * (small nods, its eyes on the viewer) until told otherwise.
   */
  listen(speaking: boolean): void;
  /**
   * Drops queued, not yet rendered agent audio at once — of `tag` only, or everything
   * (no tag, or `all`) — and closes the mouth. Reports what was cut for `tag` (or the
   * tag speaking); null when nothing of it was queued, heard or streamed. The cut's
   * speech event follows on the sink once the stream has delivered what preceded it.
   */
  interrupt(
    options?: { tag?: string; all?: boolean },
  ): SpeechCut | null | Promise<SpeechCut | null>;
  /** Media segments produced for sinks so far. */
  readonly segmentsRendered: number;
  /** Stops and releases everything (processes, pipes, timers). graceful: finish the current fragment within timeoutMs. Resolves {clean} — false when it had to kill. Idempotent. */
  stop(options: { graceful: boolean; timeoutMs: number }): Promise<
    { clean: boolean }
  >;
  /** Latency and drop counters, for metrics and docs/performance.md. */
  stats(): RenderStats;
  /**
   * Also encodes the session once more as RTP (H.264 + Opus) to an SFU mountpoint
   * (lib/render/rtp.ts), for its whole life beside any fMP4 stream; `sink` hears of its
   * failure and of the speech it carries. Renderers that cannot (a render worker) leave
   * it out.
   */
  publishRtp?(
    target: {
      host: string;
      videoPort: number;
      audioPort: number;
      srtp?: string;
    },
    sink: RtpSink,
  ): void;
}

export interface RenderOpenOptions {
  sessionId: string;
  /**
   * The session's tenant: a photo avatar is looked up under it (DECISIONS 12). Without
   * it only the catalog's avatars open.
   */
  tenantId?: string;
  avatarId: string;
  bgId: string;
  /**
   * `rtp`: the session's media goes out only through `publishRtp` (webrtc_sfu), so no
   * fMP4 encoder is started ahead of a socket. Default `fmp4`.
   */
  output?: "fmp4" | "rtp";
}

/** Opens render sessions. `open` rejects with `RenderStartError`. */
export interface RenderBackend {
  open(options: RenderOpenOptions): Promise<RenderSession>;
}

/** Why a render session could not open; `kind` maps to AVTR_RENDER_FAILED / _TIMEOUT / _MISCONFIGURED. */
export class RenderStartError extends Error {
  constructor(
    readonly kind: "failed" | "timeout" | "misconfigured",
    message: string,
  ) {
    super(message);
    this.name = "RenderStartError";
  }
}
