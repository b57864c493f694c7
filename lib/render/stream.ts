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
 * Each viewer's fragments are rebased (`tfdt` lowered, `mfhd` renumbered; ./mp4.ts) so
 * its timeline starts near 0 on its first fragment, which is a keyframe, and runs on
 * without holes (DECISIONS 6). With no viewer the caller stops feeding frames: ffmpeg
 * times raw input by count, so the encoder's timeline simply pauses, and resumes
 * without a hole when the next viewer comes.
 */
import type { Logger } from "../log.ts";
import { Encoder } from "./encoder.ts";
import { parseFragment } from "./mp4_parse.ts";
import { rebaseFragment } from "./mp4_rebase.ts";
import type { RenderSink } from "./port.ts";
import {
  type AudioTrack,
  readInit,
  segmentProblem,
  settleDelivered,
  type WaitingPush,
} from "./segments.ts";

export interface EncoderStreamOptions {
  ffmpeg: string;
  width: number;
  height: number;
  fps: number;
  sampleRate: number;
  log: Logger;
  /** The render clock's `now` (audio-latency marks). */
  now: () => number;
  /** Audio-latency samples (ms) of the session, appended to. */
  latency: number[];
  /** A fragment went to a viewer. */
  onDelivered: () => void;
  /**
   * Optional: fragment went to `sink`; its audio ends at run sample `audioEnd` and the
   * viewer's timeline starts at run sample `viewerStart` (both at `sampleRate`).
   */
  onFragmentTo?: (
    sink: RenderSink,
    audioEnd: number,
    viewerStart: number,
  ) => void;
  /**
   * The encoder failed (its viewer was told through `onError`); this run is over, the
   * caller starts another on the next attach.
   */
  onFailure: (run: EncoderStream, err: Error) => void;
}

interface InitFacts {
  bytes: Uint8Array;
  mime: string;
  videoTrackId: number;
  audioTrack: AudioTrack | null;
  /** Media timescale by track id. */
  timescales: Map<number, number>;
  /** trex default sample flags by track id. */
  defaults: Map<number, number>;
}

interface Fragment {
  bytes: Uint8Array;
  /** Whether the video track starts on a keyframe here. */
  key: boolean;
  /** Base decode time by track id, in the track's timescale. */
  times: Map<number, number>;
  /** Where the audio track's samples end, in the track's timescale (0 without). */
  audioEnd: number;
}

interface Viewer {
  sink: RenderSink;
  initSent: boolean;
  /** What this viewer's fragments are lowered by, per track; null before its first. */
  offsets: Map<number, number> | null;
  sequence: number;
}

/** Fragments kept since the last keyframe, at most (a runaway GOP is dropped). */
const MAX_GOP_FRAGMENTS = 128;
const MAX_GOP_BYTES = 4 * 1024 * 1024;
const MAX_WAITING = 256;

/** One ffmpeg run and its viewer. Throws from the constructor when ffmpeg cannot spawn. */
export class EncoderStream {
  readonly encoder: Encoder;
  /** Audio samples written to this run. */
  samples = 0;
  /** Pushed audio waiting to show up in a fragment. */
  readonly waiting: WaitingPush[] = [];
  #init: InitFacts | null = null;
  #checked = false;
  #gop: Fragment[] = [];
  #gopBytes = 0;
  #viewer: Viewer | null = null;
  #failed = false;

  constructor(private readonly o: EncoderStreamOptions) {
    this.encoder = new Encoder({
      ffmpeg: o.ffmpeg,
      width: o.width,
      height: o.height,
      fps: o.fps,
      sampleRate: o.sampleRate,
    }, {
      onInit: (bytes) => this.#onInit(bytes),
      onSegment: (bytes) => this.#onSegment(bytes),
      onFailure: (err) => this.fail(err),
    });
  }

  /** Whether a viewer is attached (frames are only worth encoding then). */
  get watched(): boolean {
    return this.#viewer !== null;
  }

  /** Makes `sink` the viewer: init, the current GOP at once, then live fragments. */
  attach(sink: RenderSink): void {
    const viewer: Viewer = {
      sink,
      initSent: false,
      offsets: null,
      sequence: 0,
    };
    this.#viewer = viewer;
    if (!this.#init) return;
    this.#sendInit(viewer);
    for (const f of this.#gop) {
      if (this.#viewer !== viewer) return;
      this.#deliver(viewer, f);
    }
  }

  detach(): void {
    this.#viewer = null;
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
    if (!options.graceful) this.#viewer = null;
    return this.encoder.stop(options);
  }

  /** Ends this run as failed (e.g. the caller saw it fall behind real time). */
  fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = true;
    void this.encoder.stop({ graceful: false, timeoutMs: 0 });
    this.o.log.warn("render stream failed", { err });
    const viewer = this.#viewer;
    this.#viewer = null;
    // The session forgets this run first, so a sink that re-attaches from its onError
    // gets a new encoder, not this dead one.
    this.o.onFailure(this, err);
    if (viewer) this.#call("error", () => viewer.sink.onError(err));
  }

  /** The viewer's sink failing is its own business: logged, never the encoder's. */
  #call(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.o.log.error("render sink failed", { what, err });
    }
  }

  #onInit(bytes: Uint8Array): void {
    if (this.#failed) return;
    try {
      const init = readInit(bytes);
      this.#init = {
        bytes,
        mime: init.mime,
        videoTrackId: init.videoTrackId,
        audioTrack: init.audioTrack,
        timescales: new Map(init.tracks.map((t) => [t.trackId, t.timescale])),
        defaults: new Map(
          init.tracks.map((t) => [t.trackId, t.defaultSampleFlags]),
        ),
      };
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error("unreadable init"));
      return;
    }
    if (this.#viewer) this.#sendInit(this.#viewer);
  }

  #sendInit(viewer: Viewer): void {
    const init = this.#init!;
    viewer.initSent = true;
    this.#call("init", () => viewer.sink.onInit(init.mime, init.bytes));
  }

  #onSegment(bytes: Uint8Array): void {
    const init = this.#init;
    if (this.#failed || !init) return;
    if (!this.#checked) {
      this.#checked = true;
      const problem = segmentProblem(bytes, init.videoTrackId);
      if (problem) {
        this.fail(new Error(problem));
        return;
      }
    }
    let fragment: Fragment;
    try {
      const { tracks } = parseFragment(bytes, init.defaults);
      const video = tracks.find((t) => t.trackId === init.videoTrackId);
      const audio = tracks.find((t) => t.trackId === init.audioTrack?.id);
      fragment = {
        bytes,
        key: video?.firstSampleSync ?? false,
        times: new Map(tracks.map((t) => [t.trackId, t.baseDecodeTime])),
        audioEnd: audio ? audio.baseDecodeTime + audio.duration : 0,
      };
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error("unreadable fragment"));
      return;
    }
    if (this.waiting.length > 0 && init.audioTrack) {
      settleDelivered(
        bytes,
        init.audioTrack,
        this.waiting,
        this.o.latency,
        this.o.now,
      );
    }
    this.#keep(fragment);
    if (this.#viewer) this.#deliver(this.#viewer, fragment);
  }

  /** Keeps the fragments since the last keyframe, bounded. */
  #keep(f: Fragment): void {
    if (f.key) {
      this.#gop = [f];
      this.#gopBytes = f.bytes.length;
      return;
    }
    if (this.#gop.length === 0) return;
    this.#gop.push(f);
    this.#gopBytes += f.bytes.length;
    if (
      this.#gop.length > MAX_GOP_FRAGMENTS || this.#gopBytes > MAX_GOP_BYTES
    ) {
      this.#gop = [];
      this.#gopBytes = 0;
    }
  }

  /**
   * Hands `f` to `viewer`, rebased to its timeline. A viewer's first fragment is a
   * keyframe; every track is lowered by the same time (the earliest track's start, in
   * seconds), so tracks stay in sync and all start at or just after 0.
   */
  #deliver(viewer: Viewer, f: Fragment): void {
    if (!viewer.initSent) return;
    if (!viewer.offsets) {
      if (!f.key) return;
      viewer.offsets = this.#offsetsFrom(f);
    }
    let out: Uint8Array;
    try {
      out = rebaseFragment(f.bytes, viewer.offsets, ++viewer.sequence);
    } catch {
      // Only this viewer's timeline broke: it is told, and a re-attach (a fresh init
      // and GOP from the same encoder) starts it over.
      this.#viewer = null;
      this.#call(
        "error",
        () => viewer.sink.onError(new Error("fragment out of the timeline")),
      );
      return;
    }
    this.o.onDelivered();
    this.#call("segment", () => viewer.sink.onSegment(out));
    const track = this.#init!.audioTrack;
    if (this.o.onFragmentTo && track && this.#viewer === viewer) {
      const toRate = this.o.sampleRate / track.timescale;
      const start = viewer.offsets.get(track.id) ?? 0;
      this.#call(
        "speech",
        () =>
          this.o.onFragmentTo!(
            viewer.sink,
            f.audioEnd * toRate,
            start * toRate,
          ),
      );
    }
  }

  #offsetsFrom(f: Fragment): Map<number, number> {
    const scales = this.#init!.timescales;
    let start = Infinity;
    for (const [id, time] of f.times) {
      const scale = scales.get(id);
      if (scale) start = Math.min(start, time / scale);
    }
    const offsets = new Map<number, number>();
    if (start === Infinity) return offsets;
    for (const [id, scale] of scales) {
      // Floored (with a hair of slack for float error): never past a track's own start.
      offsets.set(id, Math.floor(start * scale + 1e-6));
    }
    return offsets;
  }
}
