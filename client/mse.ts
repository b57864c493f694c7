/**
 * The video side of the browser client: plays the socket's fMP4 stream through Media
 * Source Extensions at low latency. One `MediaSource` per stream (every socket sends
 * its own `media.init` and init segment, timestamps restarting near 0), appends queued
 * while the `SourceBuffer` is busy, the buffer trimmed behind the playhead, a jump to
 * the live edge when playback falls behind, and a seek over holes left by fragments
 * the server dropped for a slow connection.
 *
 * Where `MediaSource` is absent (iPhone Safari, iOS 17.1+) it uses `ManagedMediaSource`:
 * remote playback disabled on the video (Safari opens the source only then), and
 * appends made only while the source is `streaming` (between its `startstreaming` and
 * `endstreaming` events); segments arriving in between are held, the oldest dropped
 * past `HELD_MAX`, and the live-edge jump of `tick()` catches up once it streams again.
 */
import { ArrivalWait } from "./arrival_wait.ts";
import { errorText } from "./errors.ts";
import { LiveEdge, SeekWait } from "./live_edge.ts";

/** How close to the end of a buffered range the playhead counts as stalled at a hole. */
const HOLE_EDGE_S = 0.1;
/** Segments held while a `ManagedMediaSource` does not stream (~5 s of 40-ms segments). */
const HELD_MAX = 125;

/** `MediaSource` or Safari's `ManagedMediaSource` (not in TypeScript's DOM types yet). */
interface SourceClass {
  new (): MediaSource;
  isTypeSupported(type: string): boolean;
}

/** The Media Source API of this browser: `MediaSource`, else `ManagedMediaSource`. */
function sourceClass(): { cls: SourceClass; managed: boolean } | null {
  const g = globalThis as unknown as {
    MediaSource?: SourceClass;
    ManagedMediaSource?: SourceClass;
  };
  if (g.MediaSource) return { cls: g.MediaSource, managed: false };
  if (g.ManagedMediaSource) return { cls: g.ManagedMediaSource, managed: true };
  return null;
}

export interface LiveBufferOptions {
  /** Fall this far behind the newest media (seconds) and playback jumps forward. */
  maxLatencyS?: number;
  /** Where a jump lands, seconds before the newest media. */
  targetLatencyS?: number;
  /** Media kept behind the playhead (seconds). */
  keepBehindS?: number;
  /** Reports a stream the browser cannot play (unsupported codecs, decode error). */
  onError?: (code: string, message: string) => void;
  /** The buffer changed (a segment appended): a paused video may start now. */
  onAppended?: () => void;
  /**
   * The speech at the playhead and the first start up to `toMs` (media ms), so that a
   * live-edge jump skips silence, not speech (./live_edge.ts).
   */
  speechAhead?: (
    toMs: number,
  ) => { speaking: boolean; nextStartMs: number | null };
}

export interface LiveBufferStats {
  /** Streams started (one per socket: each sends its own init segment). */
  streams: number;
  segmentsAppended: number;
  segmentsDropped: number;
  liveEdgeJumps: number;
  gapSkips: number;
  /** How long a segment waits to play once appended (./arrival_wait.ts), null before. */
  arrivalWaitMs: number | null;
}

/** Low-latency MSE playback of one fMP4 stream at a time into a `<video>`. */
export class LiveBuffer {
  readonly stats: LiveBufferStats = {
    streams: 0,
    segmentsAppended: 0,
    segmentsDropped: 0,
    liveEdgeJumps: 0,
    gapSkips: 0,
    arrivalWaitMs: null,
  };
  readonly #wait = new ArrivalWait();
  /** The append under way is a media segment (not the init segment). */
  #appendingMedia = false;
  #source: MediaSource | null = null;
  #url: string | null = null;
  #sb: SourceBuffer | null = null;
  #queue: ArrayBuffer[] = [];
  #mime: string | null = null;
  /** False while a `ManagedMediaSource` says it has enough (after `endstreaming`). */
  #streaming = true;
  /** The queue's head is the stream's init segment, not appended yet. */
  #initPending = false;
  /** Bumped on every reset so callbacks of an older MediaSource do nothing. */
  #generation = 0;
  readonly #edge: LiveEdge;
  readonly #seek = new SeekWait();
  readonly #keepBehind: number;
  readonly #onError: (code: string, message: string) => void;
  readonly #onAppended: () => void;
  readonly #speechAhead: LiveBufferOptions["speechAhead"];

  constructor(
    readonly video: HTMLVideoElement,
    options: LiveBufferOptions = {},
  ) {
    this.#edge = new LiveEdge(
      options.maxLatencyS ?? 1,
      options.targetLatencyS ?? 0.25,
    );
    this.#keepBehind = options.keepBehindS ?? 3;
    this.#onError = options.onError ?? (() => {});
    this.#onAppended = options.onAppended ?? (() => {});
    this.#speechAhead = options.speechAhead;
  }

  /** Starts a new stream of type `mime`: a fresh MediaSource; earlier media is dropped. */
  reset(mime: string): void {
    this.#detach();
    const api = sourceClass();
    if (!api) {
      this.#onError(
        "unsupported_media",
        "This browser has no Media Source Extensions",
      );
      return;
    }
    if (!api.cls.isTypeSupported(mime)) {
      this.#onError("unsupported_media", `This browser cannot play ${mime}`);
      return;
    }
    const generation = ++this.#generation;
    this.stats.streams++;
    this.#edge.reset(performance.now());
    const source = new api.cls();
    this.#source = source;
    this.#mime = mime;
    this.#initPending = true;
    this.#streaming = true;
    if (api.managed) {
      // Safari opens a ManagedMediaSource only with remote playback (AirPlay) disabled.
      this.video.disableRemotePlayback = true;
      this.#streaming = (source as { streaming?: boolean }).streaming === true;
      source.addEventListener("startstreaming", () => {
        if (generation !== this.#generation) return;
        this.#streaming = true;
        this.#pump();
      });
      source.addEventListener("endstreaming", () => {
        if (generation === this.#generation) this.#streaming = false;
      });
    }
    this.#url = URL.createObjectURL(source);
    source.addEventListener("sourceopen", () => {
      if (generation !== this.#generation || !this.#mime) return;
      try {
        const sb = source.addSourceBuffer(this.#mime);
        sb.mode = "segments";
        sb.addEventListener("updateend", () => {
          if (generation !== this.#generation) return;
          if (this.#appendingMedia) {
            this.#appendingMedia = false;
            this.#wait.sample(this.latencyS * 1000);
            this.stats.arrivalWaitMs = this.#wait.ms;
          }
          this.#onAppended();
          this.#pump();
        });
        sb.addEventListener("error", () => {
          if (generation === this.#generation) {
            this.#onError(
              "media_error",
              "The browser could not decode a segment",
            );
          }
        });
        this.#sb = sb;
        this.#pump();
      } catch (err) {
        this.#onError("unsupported_media", errorText(err));
      }
    }, { once: true });
    this.video.src = this.#url;
  }

  /** Queues one binary frame (the init segment first, then moof+mdat segments). */
  append(data: ArrayBuffer): void {
    if (!this.#source) return;
    this.#queue.push(data);
    if (!this.#streaming && this.#queue.length > HELD_MAX) {
      // Held too long: drop the oldest media segment, never the pending init segment.
      this.#queue.splice(this.#initPending ? 1 : 0, 1);
      this.stats.segmentsDropped++;
    }
    this.#pump();
  }

  /** Newest buffered media minus the playhead, seconds (0 with nothing buffered). */
  get latencyS(): number {
    const b = this.#bufferedRanges();
    if (!b || b.length === 0) return 0;
    return Math.max(0, b.end(b.length - 1) - this.video.currentTime);
  }

  /**
   * Keeps playback live; call a few times a second. Seeks over holes, jumps to the
   * live edge past `maxLatencyS`, trims media older than `keepBehindS`.
   */
  tick(): void {
    const b = this.#bufferedRanges();
    if (!b || b.length === 0) return;
    const t = this.video.currentTime;
    let current = -1;
    let next: number | null = null;
    for (let i = 0; i < b.length; i++) {
      if (b.start(i) - 0.05 <= t && t < b.end(i)) current = i;
      else if (b.start(i) > t && next === null) next = b.start(i);
    }
    // A seek under way (a jump, a skip) is left to finish, a while: another would
    // restart it.
    if (this.#seek.wait(performance.now(), this.video.seeking)) {
      return this.#trim();
    }
    // At (or outside) the end of a range with media after a hole: playback would stall.
    const atHole = next !== null &&
      (current === -1 || b.end(current) - t < HOLE_EDGE_S);
    if (atHole) {
      this.video.currentTime = next! + 0.01;
      this.stats.gapSkips++;
      return this.#trim();
    }
    const end = b.end(b.length - 1);
    const speech = this.#speechAhead?.(end * 1000);
    const to = this.#edge.decide({
      now: performance.now(),
      time: t,
      end,
      speech: speech && {
        speaking: speech.speaking,
        nextStartS: speech.nextStartMs === null
          ? null
          : speech.nextStartMs / 1000,
      },
    });
    if (to !== null) {
      this.video.currentTime = to;
      this.stats.liveEdgeJumps++;
    }
    this.#trim();
  }

  /** Detaches from the video element and frees the MediaSource. */
  close(): void {
    this.#detach();
    this.video.removeAttribute("src");
    this.video.load();
  }

  #detach(): void {
    this.#generation++;
    this.#queue = [];
    this.#appendingMedia = false;
    this.#wait.reset();
    this.stats.arrivalWaitMs = null;
    this.#sb = null;
    this.#mime = null;
    if (this.#source?.readyState === "open") {
      try {
        this.#source.endOfStream();
      } catch {
        // Already ending: nothing left to release.
      }
    }
    this.#source = null;
    if (this.#url) URL.revokeObjectURL(this.#url);
    this.#url = null;
  }

  #bufferedRanges(): TimeRanges | null {
    try {
      return this.#sb ? this.#sb.buffered : null;
    } catch {
      return null;
    }
  }

  #trim(): void {
    const sb = this.#sb;
    const b = this.#bufferedRanges();
    if (!sb || sb.updating || !b || b.length === 0) return;
    const cut = this.video.currentTime - this.#keepBehind;
    // Trim in steps of a second or more, not on every tick.
    if (cut - b.start(0) < 1) return;
    try {
      sb.remove(0, cut);
    } catch {
      // The MediaSource closed under us; the next reset starts over.
    }
  }

  #pump(): void {
    const sb = this.#sb;
    if (!sb || sb.updating || this.#queue.length === 0) return;
    if (this.#source?.readyState !== "open" || !this.#streaming) return;
    const data = this.#queue.shift()!;
    try {
      this.#appendingMedia = !this.#initPending;
      sb.appendBuffer(data);
      this.#initPending = false;
      this.stats.segmentsAppended++;
    } catch (err) {
      this.#appendingMedia = false;
      if (err instanceof DOMException && err.name === "QuotaExceededError") {
        // Full: drop this segment and free what is behind the playhead.
        this.stats.segmentsDropped++;
        const t = this.video.currentTime;
        try {
          if (t > 1) sb.remove(0, t - 0.5);
        } catch {
          // Nothing to free; the next segments are dropped the same way.
        }
        return;
      }
      this.#onError("media_error", errorText(err));
    }
  }
}
