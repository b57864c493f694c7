/**
 * The built-in renderer: draws the avatar in-process at a fixed frame rate, paced by the
 * wall clock, and encodes each attached stream with its own ffmpeg (./encoder.ts). The
 * render loop runs from `open` to `stop`, taking one frame's worth of agent audio per
 * tick (silence when none is queued), so the mouth and the audio track stay in step and
 * a stream's timestamps have no holes. What the encoder sends back is read by
 * ./segments.ts.
 */
import { findAvatar, findBackground } from "../avatars.ts";
import type { AvatarDef, BackgroundDef } from "../avatars.ts";
import type { Logger } from "../log.ts";
import { drawAvatar, type Frame } from "./draw.ts";
import { Encoder } from "./encoder.ts";
import { ffmpegPath } from "./ffmpeg.ts";
import { planTicks, realClock, type RenderClock } from "./pacing.ts";
import {
  type RenderBackend,
  type RenderOpenOptions,
  type RenderSession,
  type RenderSink,
  RenderStartError,
  type RenderStats,
} from "./port.ts";
export { planTicks, realClock, type RenderClock } from "./pacing.ts";
import {
  type AudioTrack,
  readInit,
  segmentProblem,
  settleDelivered,
  type WaitingPush,
} from "./segments.ts";
import {
  analyzeVoice,
  AudioQueue,
  blinkAt,
  MouthFollower,
  Resampler,
  STREAM_RATE,
} from "./voice.ts";

export interface BuiltinOptions {
  width?: number;
  height?: number;
  fps?: number;
  clock?: RenderClock;
  /** ffmpeg executable; defaults to `ffmpegPath()`. */
  ffmpeg?: string;
  /** Frames produced at once when the loop wakes late before it rebases its clock. */
  maxCatchUpFrames?: number;
}

interface Stream {
  sink: RenderSink;
  encoder: Encoder;
  /** Samples written to this stream's audio track. */
  samples: number;
  audioTrack: AudioTrack | null;
  videoTrackId: number;
  /** Whether the first segment's layout was checked (tfhd flags, keyframe). */
  checked: boolean;
  /** Pushed audio waiting to show up in a segment: stream sample position, push time. */
  waiting: WaitingPush[];
}

const MAX_MARKS = 256;

class BuiltinSession implements RenderSession {
  #frameMs: number;
  #samplesPerFrame: number;
  #t0: number;
  #produced = 0;
  #timer: unknown;
  #closed = false;
  #stopping: Promise<{ clean: boolean }> | null = null;
  #stream: Stream | null = null;
  #retiring = new Set<Promise<unknown>>();
  #last: Uint8Array | null = null;
  #frame: Frame;
  #queue = new AudioQueue();
  #resampler = new Resampler(STREAM_RATE);
  #mouth = new MouthFollower();
  #pushed = 0;
  #marks: Array<{ idx: number; at: number }> = [];
  #segments = 0;
  #latency: number[] = [];
  #skipped = 0;
  #seed: number;

  constructor(
    private readonly avatar: AvatarDef,
    private readonly bg: BackgroundDef,
    private readonly ffmpeg: string,
    private readonly opts: Required<Omit<BuiltinOptions, "ffmpeg">>,
    private readonly log: Logger,
    private readonly onStopped: () => void,
  ) {
    this.#frameMs = 1000 / opts.fps;
    this.#samplesPerFrame = STREAM_RATE / opts.fps;
    this.#frame = {
      width: opts.width,
      height: opts.height,
      data: new Uint8Array(0),
    };
    this.#seed = Math.floor(Math.random() * 1e6);
    this.#t0 = opts.clock.now();
    this.#tick();
  }

  get segmentsRendered(): number {
    return this.#segments;
  }

  stats(): RenderStats {
    return {
      audioLatencyMs: [...this.#latency],
      droppedAudioSamples: this.#queue.dropped,
      queuedAudioSamples: this.#queue.length,
      skippedDraws: this.#skipped,
    };
  }

  attach(sink: RenderSink): void {
    if (this.#closed) {
      sink.onError(new Error("render session stopped"));
      return;
    }
    this.#endStream();
    const stream: Stream = {
      sink,
      encoder: null as unknown as Encoder,
      samples: 0,
      audioTrack: null,
      videoTrackId: 0,
      checked: false,
      waiting: [],
    };
    try {
      stream.encoder = new Encoder({
        ffmpeg: this.ffmpeg,
        width: this.opts.width,
        height: this.opts.height,
        fps: this.opts.fps,
        sampleRate: STREAM_RATE,
      }, {
        onInit: (bytes) => this.#onInit(stream, bytes),
        onSegment: (bytes) => this.#onSegment(stream, bytes),
        onFailure: (err) => this.#failStream(stream, err),
      });
    } catch (err) {
      this.log.error("render encoder failed to start", { err });
      sink.onError(new Error("render encoder failed to start"));
      return;
    }
    this.#stream = stream;
    this.#last = null;
  }

  detach(): void {
    this.#endStream();
  }

  pushAudio(pcm: Int16Array, sampleRate: number): void {
    if (this.#closed || pcm.length === 0) return;
    const samples = this.#resampler.process(pcm, sampleRate);
    if (this.#marks.length < MAX_MARKS) {
      this.#marks.push({ idx: this.#pushed, at: this.opts.clock.now() });
    }
    this.#pushed += samples.length;
    this.#queue.push(samples);
  }

  interrupt(): void {
    this.#queue.clear();
    this.#marks = [];
  }

  stop(
    options: { graceful: boolean; timeoutMs: number },
  ): Promise<{ clean: boolean }> {
    this.#stopping ??= this.#stop(options);
    return this.#stopping;
  }

  async #stop(
    options: { graceful: boolean; timeoutMs: number },
  ): Promise<{ clean: boolean }> {
    this.#closed = true;
    if (this.#timer !== undefined) this.opts.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    let clean = true;
    const stream = this.#stream;
    if (stream) {
      const r = await stream.encoder.stop(options);
      clean = r.clean;
      this.#stream = null;
    }
    await Promise.all([...this.#retiring]);
    this.#queue.clear();
    this.onStopped();
    return { clean };
  }

  #endStream(): void {
    const stream = this.#stream;
    if (!stream) return;
    this.#stream = null;
    this.#retire(stream.encoder);
  }

  #retire(encoder: Encoder): void {
    const p = encoder.stop({ graceful: false, timeoutMs: 0 });
    this.#retiring.add(p);
    void p.finally(() => this.#retiring.delete(p));
  }

  #failStream(stream: Stream, err: Error): void {
    if (this.#stream !== stream) return;
    this.#stream = null;
    this.#retire(stream.encoder);
    this.log.warn("render stream failed", { err });
    try {
      stream.sink.onError(err);
    } catch (e) {
      this.log.error("render sink failed", { err: e });
    }
  }

  #onInit(stream: Stream, bytes: Uint8Array): void {
    if (this.#stream !== stream) return;
    let mime: string;
    try {
      const init = readInit(bytes);
      stream.videoTrackId = init.videoTrackId;
      if (init.audioTrack) stream.audioTrack = init.audioTrack;
      mime = init.mime;
    } catch (err) {
      this.#failStream(
        stream,
        err instanceof Error ? err : new Error(String(err)),
      );
      return;
    }
    try {
      stream.sink.onInit(mime, bytes);
    } catch (err) {
      this.log.error("render sink failed", { err });
    }
  }

  #onSegment(stream: Stream, bytes: Uint8Array): void {
    if (this.#stream !== stream) return;
    if (!stream.checked) {
      stream.checked = true;
      const problem = segmentProblem(bytes, stream.videoTrackId);
      if (problem) {
        this.#failStream(stream, new Error(problem));
        return;
      }
    }
    this.#segments++;
    if (stream.waiting.length > 0 && stream.audioTrack) {
      settleDelivered(
        bytes,
        stream.audioTrack,
        stream.waiting,
        this.#latency,
        () => this.opts.clock.now(),
      );
    }
    try {
      stream.sink.onSegment(bytes);
    } catch (err) {
      this.log.error("render sink failed", { err });
    }
  }

  #tick = (): void => {
    this.#timer = undefined;
    if (this.#closed) return;
    const clock = this.opts.clock;
    const plan = planTicks(
      clock.now() - this.#t0,
      this.#produced,
      this.opts.fps,
      this.opts.maxCatchUpFrames,
    );
    this.#t0 += plan.rebase * this.#frameMs;
    for (let i = 0; i < plan.produce; i++) {
      this.#produce(i === plan.produce - 1);
    }
    const next = this.#t0 + this.#produced * this.#frameMs;
    this.#timer = clock.setTimer(this.#tick, next - clock.now());
  };

  #produce(draw: boolean): void {
    const head = this.#pushed - this.#queue.length;
    const { samples, real } = this.#queue.take(this.#samplesPerFrame);
    const mouth = this.#mouth.next(analyzeVoice(samples));
    const t = this.#produced / this.opts.fps;
    this.#produced++;
    const stream = this.#stream;
    // Marks of audio taken now move to the stream (or are dropped with no stream).
    while (this.#marks.length > 0 && this.#marks[0].idx < head + real) {
      const m = this.#marks.shift()!;
      if (m.idx >= head && stream && stream.waiting.length < MAX_MARKS) {
        stream.waiting.push({ pos: stream.samples + (m.idx - head), at: m.at });
      }
    }
    if (!stream) return;
    if (draw || this.#last === null) {
      this.#frame.data = new Uint8Array(
        this.opts.width * this.opts.height * 3 / 2,
      );
      drawAvatar(this.#frame, this.avatar, this.bg, {
        t,
        mouthOpen: mouth.open,
        mouthWide: mouth.wide,
        blink: blinkAt(t, this.#seed),
      });
      this.#last = this.#frame.data;
    } else {
      this.#skipped++;
    }
    const audio = new Uint8Array(
      samples.buffer,
      samples.byteOffset,
      samples.byteLength,
    );
    stream.samples += samples.length;
    if (!stream.encoder.write(this.#last, audio)) {
      this.#failStream(
        stream,
        new Error("render encoder fell behind real time"),
      );
    }
  }
}

/** The deps the built-in renderer uses (a subset of AppDeps). */
export interface RendererDeps {
  log: Logger;
  onClose: Array<() => void | Promise<void>>;
}

/**
 * The in-process renderer. Open sessions are force-stopped when the app closes
 * (registered on `deps.onClose`); `close()` does the same on demand.
 */
export function createBuiltinRenderer(
  deps: RendererDeps,
  options: BuiltinOptions = {},
): RenderBackend & { close(): Promise<void> } {
  const open = new Set<BuiltinSession>();
  const opts = {
    width: options.width ?? 384,
    height: options.height ?? 384,
    fps: options.fps ?? 25,
    clock: options.clock ?? realClock,
    maxCatchUpFrames: options.maxCatchUpFrames ?? 25,
  };
  const close = async () => {
    await Promise.all(
      [...open].map((s) => s.stop({ graceful: false, timeoutMs: 0 })),
    );
  };
  deps.onClose.push(close);
  return {
    async open(o: RenderOpenOptions): Promise<RenderSession> {
      const avatar = findAvatar(o.avatarId);
      const bg = findBackground(o.bgId);
      if (!avatar || !bg) {
        throw new RenderStartError(
          "misconfigured",
          "unknown avatar or background",
        );
      }
      let ffmpeg = options.ffmpeg;
      if (!ffmpeg) {
        try {
          ffmpeg = await ffmpegPath();
        } catch (err) {
          deps.log.error("ffmpeg not available", { err });
          throw new RenderStartError("failed", "the encoder is not available");
        }
      }
      const session: BuiltinSession = new BuiltinSession(
        avatar,
        bg,
        ffmpeg,
        opts,
        deps.log,
        () => open.delete(session),
      );
      open.add(session);
      return session;
    },
    close,
  };
}
