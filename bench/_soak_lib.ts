/**
 * Pieces of the soak (`bench/soak.ts`): open handles and RSS of the service and its
 * encoders from /proc, the audio-vs-video track time of received fMP4 fragments, and the
 * end-of-run judgements.
 */
import { parseFragment, parseInit } from "../lib/render/mp4_parse.ts";
import { childrenOf, quantile, rssKiB } from "./_media_lib.ts";

// ---------------------------------------------------------------------------
// /proc

/** Open file descriptors of `pid` (entries of /proc/<pid>/fd), 0 when it is gone. */
export async function fdCount(pid: number): Promise<number> {
  let n = 0;
  try {
    for await (const _ of Deno.readDir(`/proc/${pid}/fd`)) n++;
  } catch { /* gone */ }
  return n;
}

/** RSS and open handles of the service and of its ffmpeg encoders. */
export interface HandleSample {
  serviceRssKiB: number;
  serviceFds: number;
  encoders: number;
  encoderRssKiB: number;
  encoderFds: number;
  encoderPids: number[];
}

/** Samples the service process `pid` and its ffmpeg children. */
export async function sampleHandles(pid: number): Promise<HandleSample> {
  const kids = await childrenOf(pid, "ffmpeg");
  let rss = 0;
  let fds = 0;
  for (const k of kids) {
    rss += await rssKiB(k.pid);
    fds += await fdCount(k.pid);
  }
  return {
    serviceRssKiB: await rssKiB(pid),
    serviceFds: await fdCount(pid),
    encoders: kids.length,
    encoderRssKiB: rss,
    encoderFds: fds,
    encoderPids: kids.map((k) => k.pid),
  };
}

// ---------------------------------------------------------------------------
// A/V offset of one media socket

/** Fragments with video (40 ms each) whose mean offset is a socket's baseline: 2 s. */
const BASE_FRAGMENTS = 50;

/**
 * Follows the audio and video track times of the fragments one media socket receives.
 * The offset is where the audio track ends minus where the video track ends, taken at
 * every fragment carrying video; it jitters by the AAC frames the encoder holds back.
 * The drift is the mean offset over a window minus the mean over the socket's first
 * `BASE_FRAGMENTS`: the tracks' timelines pulling apart.
 */
export class AvTrack {
  #initNext = false;
  #video = { id: 0, scale: 1 };
  #audio = { id: 0, scale: 1 };
  #trex = new Map<number, number>();
  #aEnd = -1;
  #base = { sum: 0, n: 0 };
  #win = { sum: 0, n: 0, maxAbs: 0 };

  constructor(ws: WebSocket) {
    ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") {
        if (e.data.includes('"media.init"')) this.#initNext = true;
        return;
      }
      const bytes = new Uint8Array(e.data as ArrayBuffer);
      if (this.#initNext) {
        this.#initNext = false;
        this.#onInit(bytes);
      } else if (this.#video.id) this.#onSegment(bytes);
    });
  }

  #onInit(bytes: Uint8Array): void {
    const info = parseInit(bytes);
    const v = info.tracks.find((t) => t.kind === "video");
    const a = info.tracks.find((t) => t.kind === "audio");
    this.#video = { id: v?.trackId ?? 0, scale: v?.timescale ?? 1 };
    this.#audio = { id: a?.trackId ?? 0, scale: a?.timescale ?? 1 };
    this.#trex = new Map(
      info.tracks.map((t) => [t.trackId, t.defaultSampleFlags]),
    );
    // A restarted stream (a new init on the same socket) starts a new timeline.
    this.#aEnd = -1;
    this.#base = { sum: 0, n: 0 };
    this.#win = { sum: 0, n: 0, maxAbs: 0 };
  }

  #onSegment(bytes: Uint8Array): void {
    let vEnd = -1;
    for (const t of parseFragment(bytes, this.#trex).tracks) {
      if (t.trackId === this.#audio.id) {
        this.#aEnd = (t.baseDecodeTime + t.duration) / this.#audio.scale;
      } else if (t.trackId === this.#video.id) {
        vEnd = (t.baseDecodeTime + t.duration) / this.#video.scale;
      }
    }
    if (vEnd < 0 || this.#aEnd < 0) return;
    const offset = (this.#aEnd - vEnd) * 1000;
    if (this.#base.n < BASE_FRAGMENTS) {
      this.#base.sum += offset;
      this.#base.n++;
    }
    this.#win.sum += offset;
    this.#win.n++;
    this.#win.maxAbs = Math.max(this.#win.maxAbs, Math.abs(offset));
  }

  /**
   * The window's largest |offset| and its drift (|window mean − baseline mean|), ms;
   * zeros before the baseline is complete. Starts a new window.
   */
  take(): { offsetMs: number; driftMs: number } {
    const w = this.#win;
    const based = this.#base.n >= BASE_FRAGMENTS && w.n > 0;
    const r = {
      offsetMs: w.maxAbs,
      driftMs: based
        ? Math.abs(w.sum / w.n - this.#base.sum / this.#base.n)
        : 0,
    };
    this.#win = { sum: 0, n: 0, maxAbs: 0 };
    return r;
  }
}

// ---------------------------------------------------------------------------
// Rows and judgements

/** One minute of the soak. */
export interface MinuteRow {
  minute: number;
  alive: number;
  service_rss_mib: number;
  service_fds: number;
  encoders: number;
  encoder_rss_mib: number;
  encoder_fds: number;
  latency_samples: number;
  latency_p50_ms: number | null;
  latency_p99_ms: number | null;
  /** Largest |audio end − video end| over the minute's fragments (jitter), ms. */
  av_offset_ms: number;
  /** Largest |mean offset this minute − a socket's first 2 s mean| (drift), ms. */
  av_drift_ms: number;
  /** Turns, interrupts, barge-ins, token refreshes, drops, takeovers this minute. */
  actions: Record<string, number>;
  /** Non-fatal problems this minute (a failed refresh, an unexpected close, …). */
  problems: string[];
  /** Sessions lost this minute: id and reason. */
  lost: Array<{ session: string; reason: string }>;
}

/** Latency summary of `xs` (ms), rounded; nulls when empty. */
export function latencyOf(xs: number[]): {
  p50: number | null;
  p99: number | null;
} {
  if (xs.length === 0) return { p50: null, p99: null };
  return {
    p50: Math.round(quantile(xs, 0.5)),
    p99: Math.round(quantile(xs, 0.99)),
  };
}

/** Whether `last` is within `pct` % of `first` (null: no reading to compare). */
export function within(
  first: number,
  last: number,
  pct: number,
): boolean {
  return Math.abs(last - first) <= (first * pct) / 100;
}

/** The end-of-run verdicts, measured from the first minute after `warmup` minutes. */
export interface Verdict {
  sessions_lost: number;
  zero_lost: boolean;
  /** null: too short to judge (fewer than two minutes after the warm-up). */
  rss_flat: boolean | null;
  handles_flat: boolean | null;
  av_drift_max_ms: number;
  av_drift_within_frame: boolean;
  latency_p99_first_ms: number | null;
  latency_p99_last_ms: number | null;
  latency_p99_flat: boolean | null;
}

/** One frame at 25 fps, ms. */
export const FRAME_MS = 40;

/**
 * Judges the run: RSS (service + encoders) and handles of the last minute within 5 % of
 * the first after the warm-up, the largest A/V drift within one frame, the last minute's
 * latency p99 within 25 % (or one frame, whichever is more) of the first's.
 */
export function judge(rows: MinuteRow[], warmup: number): Verdict {
  const after = rows.filter((r) => r.minute > warmup);
  const first = after[0];
  const last = after[after.length - 1];
  const judged = after.length >= 2;
  const rss = (r: MinuteRow) => r.service_rss_mib + r.encoder_rss_mib;
  const fds = (r: MinuteRow) => r.service_fds + r.encoder_fds;
  const lost = rows.reduce((n, r) => n + r.lost.length, 0);
  const drift = Math.max(0, ...rows.map((r) => r.av_drift_ms));
  const p99First = first?.latency_p99_ms ?? null;
  const p99Last = last?.latency_p99_ms ?? null;
  return {
    sessions_lost: lost,
    zero_lost: lost === 0,
    rss_flat: judged ? within(rss(first), rss(last), 5) : null,
    handles_flat: judged ? within(fds(first), fds(last), 5) : null,
    av_drift_max_ms: Math.round(drift),
    av_drift_within_frame: drift <= FRAME_MS,
    latency_p99_first_ms: p99First,
    latency_p99_last_ms: p99Last,
    latency_p99_flat: judged && p99First !== null && p99Last !== null
      ? p99Last - p99First <= Math.max(p99First * 0.25, FRAME_MS)
      : null,
  };
}
