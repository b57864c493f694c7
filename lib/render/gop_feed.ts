/**
 * The viewer side of one encoder run (./stream.ts): the init segment and the fragments
 * since the last keyframe kept, and the one viewer (sink) they go to now. A new viewer
 * gets the init, at once the fragments of the GOP so far (so it shows a picture without
 * waiting for the next keyframe), then the live fragments.
 *
 * Each viewer's fragments are rebased (`tfdt` lowered, `mfhd` renumbered; ./mp4_rebase.ts)
 * so its timeline starts near 0 on its first fragment, which is a keyframe, and runs on
 * without holes (DECISIONS 6). Every track is lowered by the same time, so they stay in
 * step: the earliest of where each track starts on that keyframe. A keyframe's fragment
 * may carry no audio (its AAC came late, ./muxer.ts), and the audio that follows then
 * starts before the frame: for such a track the start is where its last samples ended.
 */
import type { Logger } from "../log.ts";
import { parseFragment } from "./mp4_parse.ts";
import { rebaseFragment } from "./mp4_rebase.ts";
import type { RenderSink } from "../ports/render.ts";
import { type AudioTrack, readInit, segmentProblem } from "./segments.ts";

export interface GopFeedOptions {
  log: Logger;
  /** The run's audio rate (Hz): `onFragmentTo`'s unit. */
  sampleRate: number;
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
  /**
   * Where each track starts here, in its timescale: its base decode time, or for an
   * audio track this fragment does not carry, where its samples so far ended.
   */
  starts: Map<number, number>;
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

export class GopFeed {
  #init: InitFacts | null = null;
  #checked = false;
  #gop: Fragment[] = [];
  #gopBytes = 0;
  /** Where the audio track's samples so far end (its timescale). */
  #audioNext = 0;
  #viewer: Viewer | null = null;

  constructor(private readonly o: GopFeedOptions) {}

  /** Whether a viewer is attached. */
  get watched(): boolean {
    return this.#viewer !== null;
  }

  /** The stream's audio track, once the init segment is read. */
  get audioTrack(): AudioTrack | null {
    return this.#init?.audioTrack ?? null;
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

  /** Detaches the viewer; returns its sink, if any. */
  detach(): RenderSink | null {
    const sink = this.#viewer?.sink ?? null;
    this.#viewer = null;
    return sink;
  }

  /** The run's init segment; throws when it cannot be read. */
  init(bytes: Uint8Array): void {
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
    if (this.#viewer) this.#sendInit(this.#viewer);
  }

  /**
   * A fragment of the run: kept and delivered. Throws when it cannot be read, or the
   * first is not one a player can take (the run is broken); ignored before the init.
   */
  segment(bytes: Uint8Array): void {
    const init = this.#init;
    if (!init) return;
    if (!this.#checked) {
      this.#checked = true;
      const problem = segmentProblem(bytes, init.videoTrackId);
      if (problem) throw new Error(problem);
    }
    const { tracks } = parseFragment(bytes, init.defaults);
    const video = tracks.find((t) => t.trackId === init.videoTrackId);
    const audioId = init.audioTrack?.id;
    const audio = tracks.find((t) => t.trackId === audioId);
    const starts = new Map(tracks.map((t) => [t.trackId, t.baseDecodeTime]));
    const audioEnd = audio ? audio.baseDecodeTime + audio.duration : 0;
    if (audio) this.#audioNext = audioEnd;
    else if (audioId !== undefined) starts.set(audioId, this.#audioNext);
    const fragment: Fragment = {
      bytes,
      key: video?.firstSampleSync ?? false,
      starts,
      audioEnd,
    };
    this.#keep(fragment);
    if (this.#viewer) this.#deliver(this.#viewer, fragment);
  }

  #sendInit(viewer: Viewer): void {
    const init = this.#init!;
    viewer.initSent = true;
    this.#call("init", () => viewer.sink.onInit(init.mime, init.bytes));
  }

  /** The viewer's sink failing is its own business: logged, never the encoder's. */
  #call(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.o.log.error("render sink failed", { what, err });
    }
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

  /** Hands `f` to `viewer`, rebased to its timeline (its first fragment a keyframe). */
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

  /** Every track lowered by the earliest track start of keyframe fragment `f` (s). */
  #offsetsFrom(f: Fragment): Map<number, number> {
    const scales = this.#init!.timescales;
    let start = Infinity;
    for (const [id, time] of f.starts) {
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
