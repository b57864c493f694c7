/**
 * One encoder run of a built-in render session, kept across viewers: one ffmpeg
 * (./encoder.ts) for the session's life, whatever the sockets do, and the one viewer
 * (sink) it streams to now. A takeover never spawns an encoder; the new viewer gets:
 *
 * - the init segment, cached from the encoder's output;
 * - at once, the fragments since the last keyframe (at most one GOP, about 1 s), so it
 *   shows a picture without waiting for the next keyframe;
 * - then the live fragments.
 *
 * What a viewer is sent, and how its timeline is rebased, is ./gop_feed.ts. With no
 * viewer the caller stops feeding frames: ffmpeg times raw input by count, so the
 * encoder's timeline simply pauses, and resumes without a hole when the next viewer
 * comes.
 */
import { Encoder } from "./encoder.ts";
import { GopFeed, type GopFeedOptions } from "./gop_feed.ts";
import type { AudioCodec, RenderSink } from "../ports/render.ts";
import { settleDelivered, type WaitingPush } from "./segments.ts";

export interface EncoderStreamOptions extends GopFeedOptions {
  ffmpeg: string;
  width: number;
  height: number;
  fps: number;
  /** The audio codec of this run's fMP4 (default `aac`). */
  audio?: AudioCodec;
  /** The render clock's `now` (audio-latency marks). */
  now: () => number;
  /** Audio-latency samples (ms) of the session, appended to. */
  latency: number[];
  /** Hears each audio-latency sample (ms) as it is measured. */
  onLatency?: (ms: number) => void;
  /**
   * The encoder failed (its viewer was told through `onError`); this run is over, the
   * caller starts another on the next attach.
   */
  onFailure: (run: EncoderStream, err: Error) => void;
}

const MAX_WAITING = 256;

/** One ffmpeg run and its viewer. Throws from the constructor when ffmpeg cannot spawn. */
export class EncoderStream {
  readonly encoder: Encoder;
  /** The audio codec of this run's fMP4. */
  readonly audio: AudioCodec;
  /** Audio samples written to this run. */
  samples = 0;
  /** Pushed audio waiting to show up in a fragment. */
  readonly waiting: WaitingPush[] = [];
  readonly #feed: GopFeed;
  #failed = false;

  constructor(private readonly o: EncoderStreamOptions) {
    this.#feed = new GopFeed(o);
    this.audio = o.audio ?? "aac";
    this.encoder = new Encoder({
      ffmpeg: o.ffmpeg,
      width: o.width,
      height: o.height,
      fps: o.fps,
      sampleRate: o.sampleRate,
      audio: this.audio,
    }, {
      onInit: (bytes) => this.#onInit(bytes),
      onSegment: (bytes) => this.#onSegment(bytes),
      onFailure: (err) => this.fail(err),
    });
  }

  /** Whether a viewer is attached (frames are only worth encoding then). */
  get watched(): boolean {
    return this.#feed.watched;
  }

  /** Makes `sink` the viewer: init, the current GOP at once, then live fragments. */
  attach(sink: RenderSink): void {
    this.#feed.attach(sink);
  }

  detach(): void {
    this.#feed.detach();
  }

  /** Queues one frame and its audio; false when the encoder fell behind (see Encoder). */
  write(frame: Uint8Array, audio: Uint8Array): boolean {
    this.samples += audio.byteLength >> 1;
    return this.encoder.write(frame, audio);
  }

  /** Notes a push of agent audio at stream position `pos` made at `at`. */
  mark(pos: number, at: number): void {
    if (this.waiting.length < MAX_WAITING) this.waiting.push({ pos, at });
  }

  stop(options: { graceful: boolean; timeoutMs: number }): Promise<
    { clean: boolean }
  > {
    if (!options.graceful) this.#feed.detach();
    return this.encoder.stop(options);
  }

  /** Ends this run as failed (e.g. the caller saw it fall behind real time). */
  fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = true;
    void this.encoder.stop({ graceful: false, timeoutMs: 0 });
    this.o.log.warn("render stream failed", { err });
    const sink = this.#feed.detach();
    // The session forgets this run first, so a sink that re-attaches from its onError
    // gets a new encoder, not this dead one.
    this.o.onFailure(this, err);
    if (sink) {
      try {
        sink.onError(err);
      } catch (e) {
        this.o.log.error("render sink failed", { what: "error", err: e });
      }
    }
  }

  #onInit(bytes: Uint8Array): void {
    if (this.#failed) return;
    try {
      this.#feed.init(bytes);
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error("unreadable init"));
    }
  }

  #onSegment(bytes: Uint8Array): void {
    if (this.#failed) return;
    const track = this.#feed.audioTrack;
    try {
      this.#feed.segment(bytes);
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error("unreadable fragment"));
      return;
    }
    if (this.waiting.length > 0 && track) {
      settleDelivered(
        bytes,
        track,
        this.waiting,
        this.o.latency,
        this.o.now,
        this.o.onLatency,
      );
    }
  }
}
