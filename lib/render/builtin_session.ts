/**
 * One built-in render session: the render loop (one frame's worth of agent audio per
 * tick, drawn and paced by the clock), its fMP4 encoder run kept across attaches, the
 * RTP output of a webrtc_sfu session, and the speech events each viewer hears of.
 */
import type { Logger } from "../log.ts";
import {
  isThreadPainter,
  type Painter,
  type ThreadPainter,
} from "./painter.ts";
import { planTicks, type RenderClock } from "./pacing.ts";
import type {
  AudioCodec,
  RenderSession,
  RenderSink,
  RenderStats,
  RtpSink,
  SpeechCut,
} from "../ports/render.ts";
import { SpeechTimeline } from "./speech.ts";
import { SpeechRoutes } from "./speech_routes.ts";
import { EncoderStream } from "./stream.ts";
import { FaceDriver } from "./face.ts";
import { RtpOutput, type RtpTarget } from "./rtp.ts";
import {
  type FramePictures,
  type FrameWriter,
  Pictures,
  type QueuedFrame,
  ShownPicture,
} from "./picture.ts";
import { STREAM_RATE } from "./voice.ts";
import { AgentAudio } from "./agent_audio.ts";
import { PictureQueue } from "./picture_queue.ts";

/** A frame of a session: its audio, bound for its encoder run and RTP output. */
type Frame = QueuedFrame<EncoderStream, RtpOutput>;

/** How a session paces: the backend's options (frame size: the painter's). */
export interface BuiltinSessionOptions {
  fps: number;
  clock: RenderClock;
  maxCatchUpFrames: number;
  clockStamp: boolean;
  /** The wall clock (epoch ms) of the RTP output's speech events. */
  wallNow: () => number;
  /** Hears each push-to-fragment latency (ms), as it is measured. */
  onAudioLatency?: (ms: number) => void;
  /** Hears each frame written: whether its picture was painted for it. */
  onFrame?: (painted: boolean) => void;
}

/** A render session of the built-in renderer, from `open` to `stop`. */
export class BuiltinSession implements RenderSession {
  #frameMs: number;
  #samplesPerFrame: number;
  #t0: number;
  #produced = 0;
  #timer: unknown;
  #closed = false;
  #stopping: Promise<{ clean: boolean }> | null = null;
  /** The session's encoder run; replaced only after it failed. */
  #run: EncoderStream | null = null;
  /**
   * The RTP output of a webrtc_sfu session: every frame, for the session's life. While
   * it runs, speech positions are its samples and its sink gets the speech events.
   */
  #rtp: { out: RtpOutput; sink: RtpSink } | null = null;
  #retiring = new Set<Promise<unknown>>();
  /** The picture each frame written shows. */
  #shown: ShownPicture;
  /** Where frames get their pictures: painted here, or on the painter's thread. */
  #pictures: FramePictures<Frame>;
  #audio: AgentAudio;
  #speech = new SpeechTimeline();
  #routes: SpeechRoutes;
  #face: FaceDriver;
  /** The next frame's queued audio, peeked for the face's look-ahead. */
  #ahead: Int16Array;
  #segments = 0;
  #latency: number[] = [];
  #skipped = 0;

  constructor(
    private readonly painter: Painter | ThreadPainter,
    private readonly ffmpeg: string,
    private readonly opts: BuiltinSessionOptions,
    private readonly log: Logger,
    private readonly onStopped: () => void,
    /** Start the fMP4 encoder at open (false: an RTP-only session, ./rtp.ts). */
    private readonly warm: boolean,
    /**
     * Transparent background: each coded picture is the stacked-alpha frame of
     * ./stacked.ts (the painter must have `paintAlpha`).
     */
    alpha = false,
  ) {
    const write: FrameWriter<Frame> = (f, p, e) => this.#write(f, p, e);
    this.#pictures = isThreadPainter(painter)
      ? new PictureQueue(painter, write)
      : new Pictures(painter, alpha, write);
    this.#shown = new ShownPicture(
      painter.width,
      this.#pictures.codedHeight,
      opts.clockStamp,
      opts.onFrame,
    );
    this.#routes = new SpeechRoutes(this.#speech, log);
    this.#frameMs = 1000 / opts.fps;
    this.#samplesPerFrame = STREAM_RATE / opts.fps;
    this.#ahead = new Int16Array(this.#samplesPerFrame);
    // Each session moves on its own seeded rhythm (gaze, blinks, idle motion).
    this.#face = new FaceDriver(Math.floor(Math.random() * 2 ** 32), opts.fps);
    this.#audio = new AgentAudio(() => opts.clock.now());
    this.#t0 = opts.clock.now();
    if (warm) this.#startRun();
    this.#tick();
  }

  /** Whether an encoder runs (false when the warm start at open failed). */
  get running(): boolean {
    return !this.warm || this.#run !== null;
  }

  get segmentsRendered(): number {
    return this.#segments;
  }

  stats(): RenderStats {
    return {
      audioLatencyMs: [...this.#latency],
      droppedAudioSamples: this.#audio.queue.refused,
      queuedAudioSamples: this.#audio.queue.length,
      skippedDraws: this.#skipped,
    };
  }

  attach(sink: RenderSink): void {
    if (this.#closed) {
      sink.onError(new Error("render session stopped"));
      return;
    }
    // A viewer decoding another audio codec gets a run of its own (a fresh stream).
    const audio = sink.audio ?? "aac";
    if (this.#run && this.#run.audio !== audio) {
      const old = this.#run;
      this.#run = null;
      this.#retire(old.stop({ graceful: false, timeoutMs: 0 }));
    }
    const run = this.#run ?? this.#startRun(audio);
    if (!run) {
      sink.onError(new Error("render encoder failed to start"));
      return;
    }
    // A new viewer joins mid-speech: it hears of the speech under way.
    if (!this.#rtp) this.#speech.newViewer();
    else this.#routes.viewerJoinedBesideRtp();
    run.attach(sink);
  }

  detach(): void {
    this.#run?.detach();
  }

  publishRtp(target: RtpTarget, sink: RtpSink): void {
    if (this.#closed || this.#rtp) return;
    try {
      const out = new RtpOutput(
        this.ffmpeg,
        {
          width: this.painter.width,
          height: this.#pictures.codedHeight,
          fps: this.opts.fps,
          sampleRate: STREAM_RATE,
        },
        target,
        (err) => this.#failRtp(err),
        this.opts.wallNow,
      );
      const rtp = { out, sink };
      this.#rtp = rtp;
      // Speech events leave as the encoder takes their audio.
      out.onTaken = () => {
        if (this.#rtp === rtp) this.#routes.toRtp(rtp);
      };
      // Speech now follows the RTP output's timeline, which starts at 0.
      this.#speech.newRun();
    } catch (err) {
      this.log.error("render rtp encoder failed to start", { err });
      sink.onError(new Error("render rtp encoder failed to start"));
    }
  }

  /**
   * A failed RTP encoder is restarted toward the same mountpoint, its timeline (and the
   * speech on it, in wall-clock time) going on; past `MAX_RTP_RESTARTS` (./rtp.ts) a
   * minute, or when it cannot respawn, the output ends and its sink hears of it.
   */
  #failRtp(err: Error): void {
    const rtp = this.#rtp;
    if (!rtp) return;
    try {
      if (rtp.out.restart(this.opts.clock.now())) {
        return this.log.warn("render rtp encoder restarted", { err });
      }
    } catch (cause) {
      this.log.error("render rtp encoder failed to restart", { err: cause });
    }
    this.#rtp = null;
    this.#speech.newRun();
    this.#routes.rtpEnded();
    this.#retire(rtp.out.stop({ graceful: false, timeoutMs: 0 }));
    rtp.sink.onError(err);
  }

  /**
   * Where the next frame's audio goes on the timeline speech follows: the RTP output's
   * samples while it runs, else the watched encoder run's; null when nobody hears it.
   */
  #streamPos(): number | null {
    if (this.#rtp) return this.#rtp.out.samples + this.#queued(this.#rtp.out);
    return this.#run?.watched
      ? this.#run.samples + this.#queued(this.#run)
      : null;
  }

  /** Audio samples of frames still waiting for their pictures, bound for `to`. */
  #queued(to: EncoderStream | RtpOutput): number {
    return this.#pictures.pendingFor(to);
  }

  /** Spawns the session's encoder; null (logged) when ffmpeg cannot start. */
  #startRun(audio: AudioCodec = "aac"): EncoderStream | null {
    try {
      this.#run = new EncoderStream({
        ffmpeg: this.ffmpeg,
        audio,
        width: this.painter.width,
        height: this.#pictures.codedHeight,
        fps: this.opts.fps,
        sampleRate: STREAM_RATE,
        log: this.log,
        now: () => this.opts.clock.now(),
        latency: this.#latency,
        onLatency: this.opts.onAudioLatency,
        onDelivered: () => this.#segments++,
        onFragmentTo: (sink, audioEnd, viewerStart) =>
          this.#routes.toSink(sink, audioEnd, viewerStart, this.#rtp !== null),
        onFailure: (run) => {
          if (this.#run === run) this.#run = null;
          this.#retire(run.stop({ graceful: false, timeoutMs: 0 }));
        },
      });
    } catch (err) {
      this.log.error("render encoder failed to start", { err });
      this.#run = null;
    }
    // A new run's timeline starts at 0: speech positions of the old one are void.
    if (!this.#rtp) this.#speech.newRun();
    return this.#run;
  }

  pushAudio(pcm: Int16Array, sampleRate: number, tag?: string): boolean {
    if (this.#closed || pcm.length === 0) return true;
    const n = this.#audio.push(pcm, sampleRate, tag);
    if (n === null) return false;
    this.#speech.pushed(tag, n);
    return true;
  }

  endAudio(tag: string): boolean {
    if (this.#closed) return true;
    return this.#speech.end(tag, this.#streamPos());
  }

  markText(tag: string, id: number, offsetMs?: number, text?: string): void {
    if (this.#closed) return;
    const offset = offsetMs === undefined
      ? undefined
      : Math.round(offsetMs * STREAM_RATE / 1000);
    this.#speech.mark(tag, id, offset);
    if (text !== undefined) this.#audio.cue(tag, offset, text);
  }

  listen(speaking: boolean): void {
    if (!this.#closed) this.#face.listen(speaking);
  }

  interrupt(options: { tag?: string; all?: boolean } = {}): SpeechCut | null {
    const queue = this.#audio.queue;
    const before = queue.length;
    const cut = this.#speech.cut(queue, options, this.#streamPos());
    // Latency marks and cues index the queue: any removal invalidates them.
    if (queue.length !== before) this.#audio.cut();
    if (cut?.wasSpeaking || options.all || options.tag === undefined) {
      this.#face.closeMouth();
    }
    return cut;
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
    this.#pictures.close();
    if (isThreadPainter(this.painter)) this.painter.close();
    if (this.#timer !== undefined) this.opts.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    const run = this.#run;
    const rtp = this.#rtp;
    this.#rtp = null;
    const [r, rr] = await Promise.all([
      run?.stop(options),
      rtp?.out.stop(options),
    ]);
    const clean = (r?.clean ?? true) && (rr?.clean ?? true);
    this.#run = null;
    await Promise.all([...this.#retiring]);
    this.#audio.queue.clear();
    this.onStopped();
    return { clean };
  }

  /** Tracks the stop of a failed encoder (fMP4 or RTP) so `stop` waits for it. */
  #retire(stopping: Promise<unknown>): void {
    this.#retiring.add(stopping);
    void stopping.finally(() => this.#retiring.delete(stopping));
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
    const take = this.#audio.take(this.#samplesPerFrame);
    const { samples, real } = take;
    // Caption texts whose audio starts in this frame cue the head.
    for (const text of take.texts) this.#face.text(text);
    // The next frame's audio, when queued: the lips close ahead of a p (./face.ts).
    const ahead = this.#audio.queue.peek(this.#ahead) === this.#ahead.length
      ? this.#ahead
      : undefined;
    const face = this.#face.next(samples, ahead);
    this.#produced++;
    // Frames are encoded while a viewer watches; the encoder's timeline pauses otherwise.
    const run = this.#run?.watched ? this.#run : null;
    this.#speech.took(samples, real, this.#streamPos());
    // Marks of audio taken now move to the run (or are dropped with no viewer).
    if (run) {
      const at = run.samples + this.#queued(run);
      for (const m of take.marks) run.mark(at + m.offset, m.at);
    }
    const rtp = this.#rtp?.out ?? null;
    if (!run && !rtp) return;
    const frame: Frame = {
      audio: new Uint8Array(
        samples.buffer,
        samples.byteOffset,
        samples.byteLength,
      ),
      run,
      rtp,
      toRun: run && rtp
        ? run.samples + this.#queued(run) - rtp.samples - this.#queued(rtp)
        : null,
    };
    const paint = draw || !this.#shown.any;
    const asked = this.#pictures.push(
      frame,
      paint ? { state: face, weights: this.#face.weights } : null,
    );
    if (!asked) this.#skipped++;
  }

  /**
   * Writes a frame with its picture (null: the last one again) to the outputs it was
   * produced for, where they still run. A picture its thread failed to paint shows the
   * last one again while the painter is restarted; when the painter has ended, the
   * outputs fail (their viewers get a restarted stream, ./stream.ts).
   */
  #write(frame: Frame, picture: Uint8Array | null, err: Error | null): void {
    if (this.#closed) return;
    const run = frame.run === this.#run ? frame.run : null;
    const rtp = this.#rtp && frame.rtp === this.#rtp.out ? this.#rtp : null;
    if (err && (this.painter as ThreadPainter).failed) {
      if (run) run.fail(err);
      if (rtp) this.#failRtp(err);
      return;
    }
    const shown = this.#shown.next(picture);
    if (rtp && !rtp.out.write(shown, frame.audio, frame.toRun)) {
      this.#failRtp(new Error("render rtp encoder fell behind real time"));
    }
    if (run && !run.write(shown, frame.audio)) {
      run.fail(new Error("render encoder fell behind real time"));
    }
  }
}
