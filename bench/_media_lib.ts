/**
 * Pieces of the media benchmark (`bench/media.ts`): /proc readings of the service and its
 * encoders, AAC sample sizes from fMP4 fragments (how the bench tells speech from silence
 * without decoding), percentiles, and a recording "browser" on the media socket.
 */
import { child, parseBoxes } from "../lib/render/mp4_boxes.ts";
import { parseFragment, parseInit } from "../lib/render/mp4_parse.ts";

// ---------------------------------------------------------------------------
// /proc

/** One process as /proc/<pid>/stat shows it (CPU in clock ticks). */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  /** utime + stime, clock ticks. */
  ticks: number;
}

/** Reads /proc/<pid>/stat; null when the process is gone. */
export async function procStat(
  pid: number,
  /** Under /proc: a thread's `<pid>/task/<tid>`; by default the process. */
  path = String(pid),
): Promise<ProcStat | null> {
  const text = await Deno.readTextFile(`/proc/${path}/stat`).catch(() => null);
  if (!text) return null;
  const close = text.lastIndexOf(")");
  const comm = text.slice(text.indexOf("(") + 1, close);
  const f = text.slice(close + 2).split(" ");
  // After "(comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime stime …
  return {
    pid,
    comm,
    state: f[0],
    ppid: Number(f[1]),
    ticks: Number(f[11]) + Number(f[12]),
  };
}

/** Resident set size of `pid` in KiB (VmRSS), 0 when it is gone. */
export async function rssKiB(pid: number): Promise<number> {
  const text = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  return Number(text.match(/^VmRSS:\s+(\d+)\s+kB/m)?.[1] ?? 0);
}

/** Live (non-zombie) children of `ppid` whose name contains `name`. */
export async function childrenOf(
  ppid: number,
  name = "",
): Promise<ProcStat[]> {
  const out: ProcStat[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const st = await procStat(Number(e.name));
    if (st && st.ppid === ppid && st.state !== "Z" && st.comm.includes(name)) {
      out.push(st);
    }
  }
  return out;
}

/** Whether `pid` still runs as a process named like `name` (zombies count as gone). */
export async function stillRunning(
  pid: number,
  name: string,
): Promise<boolean> {
  const st = await procStat(pid);
  return !!st && st.state !== "Z" && st.comm.includes(name);
}

/** The service process and its encoders: CPU ticks and RSS, summed. */
export interface TreeSample {
  at: number;
  serviceTicks: number;
  /** The service's main thread (its event loop) alone. */
  loopTicks: number;
  encoderTicks: number;
  /** Ticks per encoder pid, to subtract encoders that were born or died meanwhile. */
  perEncoder: Map<number, number>;
  serviceRssKiB: number;
  encoderRssKiB: number;
  encoders: number;
}

/** Samples the service process `pid` and its ffmpeg children. */
export async function sampleTree(pid: number): Promise<TreeSample> {
  const self = await procStat(pid);
  const kids = await childrenOf(pid, "ffmpeg");
  let encoderRss = 0;
  for (const k of kids) encoderRss += await rssKiB(k.pid);
  return {
    at: performance.now(),
    serviceTicks: self?.ticks ?? 0,
    loopTicks: (await procStat(pid, `${pid}/task/${pid}`))?.ticks ?? 0,
    encoderTicks: kids.reduce((n, k) => n + k.ticks, 0),
    perEncoder: new Map(kids.map((k) => [k.pid, k.ticks])),
    serviceRssKiB: await rssKiB(pid),
    encoderRssKiB: encoderRss,
    encoders: kids.length,
  };
}

/** CPU time of the service and of the encoders alive at both samples, in seconds. */
export function cpuBetween(
  a: TreeSample,
  b: TreeSample,
  ticksPerSecond: number,
): { service: number; loop: number; encoders: number } {
  let enc = 0;
  for (const [pid, t] of b.perEncoder) {
    const before = a.perEncoder.get(pid);
    if (before !== undefined) enc += t - before;
  }
  return {
    service: (b.serviceTicks - a.serviceTicks) / ticksPerSecond,
    loop: (b.loopTicks - a.loopTicks) / ticksPerSecond,
    encoders: enc / ticksPerSecond,
  };
}

/** CPU ticks of this (bench) process. */
export async function selfTicks(): Promise<number> {
  return (await procStat(Deno.pid))?.ticks ?? 0;
}

/** The 1-, 5- and 15-minute load averages, as /proc/loadavg shows them. */
export async function loadavg(): Promise<string> {
  const text = await Deno.readTextFile("/proc/loadavg").catch(() => "");
  return text.split(" ").slice(0, 3).join(" ");
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<unknown> =>
  new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// fMP4

function u32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) >>> 0) + (b[at + 1] << 16) + (b[at + 2] << 8) +
    b[at + 3];
}

/**
 * Byte sizes of the samples (AAC access units) of track `trackId` in a moof+mdat
 * segment. Silence encodes to a few bytes per 1,024-sample frame, speech to ~100+.
 */
export function sampleSizes(seg: Uint8Array, trackId: number): number[] {
  const moof = parseBoxes(seg).find((b) => b.type === "moof");
  if (!moof) return [];
  const sizes: number[] = [];
  for (const traf of parseBoxes(seg, moof.bodyStart, moof.end)) {
    if (traf.type !== "traf") continue;
    const tfhd = child(seg, traf, "tfhd");
    if (!tfhd || u32(seg, tfhd.bodyStart + 4) !== trackId) continue;
    const tf = u32(seg, tfhd.bodyStart) & 0xffffff;
    let at = tfhd.bodyStart + 8;
    if (tf & 0x1) at += 8;
    if (tf & 0x2) at += 4;
    if (tf & 0x8) at += 4;
    const defSize = tf & 0x10 ? u32(seg, at) : 0;
    for (const trun of parseBoxes(seg, traf.bodyStart, traf.end)) {
      if (trun.type !== "trun") continue;
      const flags = u32(seg, trun.bodyStart) & 0xffffff;
      const count = u32(seg, trun.bodyStart + 4);
      let p = trun.bodyStart + 8;
      if (flags & 0x1) p += 4;
      if (flags & 0x4) p += 4;
      for (let i = 0; i < count; i++) {
        if (flags & 0x100) p += 4;
        let size = defSize;
        if (flags & 0x200) (size = u32(seg, p), p += 4);
        if (flags & 0x400) p += 4;
        if (flags & 0x800) p += 4;
        sizes.push(size);
      }
    }
  }
  return sizes;
}

/** The `q` quantile (0..1) of `xs` by nearest rank; NaN when empty. */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

// ---------------------------------------------------------------------------
// The browser side of one session

/** An AAC access unit larger than this many bytes carries sound (digital silence: 4). */
export const LOUD_AU_BYTES = 48;

/** A media socket that records what a player would see: timeline, gaps, speech onsets. */
export class MediaClient {
  status = "";
  errors: string[] = [];
  closeCode: number | null = null;
  segments = 0;
  /** Seconds of video received (sum of fragment durations). */
  videoSeconds = 0;
  /** Arrival time of the last segment and the largest gap between two, ms. */
  lastArrival = 0;
  maxGapMs = 0;
  /** Video timeline discontinuities (a fragment not starting where the last ended). */
  holes = 0;
  /** Fragments since the last one with a loud audio unit. */
  quietRun = 0;
  /** Engine send time of the response being waited for (null: none pending). */
  pendingSince: number | null = null;
  /** End-to-end latencies measured, ms. */
  readonly latencies: number[] = [];
  readonly ready: Promise<void>;
  #video = { id: 0, timescale: 1, next: -1 };
  #audioId = 0;
  #trex = new Map<number, number>();
  #initNext = false;
  #pendingLoud = 0;

  constructor(readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    let resolveReady!: () => void;
    let rejectReady!: (e: Error) => void;
    this.ready = new Promise((
      res,
      rej,
    ) => (resolveReady = res, rejectReady = rej));
    ws.onmessage = (e) => {
      if (typeof e.data === "string") {
        const m = JSON.parse(e.data);
        if (m.type === "session.state") this.status = m.status;
        if (m.type === "media.init") this.#initNext = true;
        if (m.type === "error") this.errors.push(m.code);
        if (m.type === "session.ended") this.status = m.status;
        if (this.status === "active" && this.#video.id) resolveReady();
        if (m.type === "error" && m.fatal) {
          rejectReady(new Error(`fatal ${m.code}`));
        }
        return;
      }
      const bytes = new Uint8Array(e.data as ArrayBuffer);
      if (this.#initNext) {
        this.#initNext = false;
        this.#onInit(bytes);
        if (this.status === "active") resolveReady();
      } else {
        this.#onSegment(bytes, performance.now());
      }
    };
    ws.onclose = (e) => {
      this.closeCode = e.code;
      rejectReady(new Error(`socket closed ${e.code}`));
    };
    ws.onerror = () => {};
  }

  #onInit(init: Uint8Array): void {
    const info = parseInit(init);
    const v = info.tracks.find((t) => t.kind === "video");
    const a = info.tracks.find((t) => t.kind === "audio");
    this.#video = {
      id: v?.trackId ?? 0,
      timescale: v?.timescale ?? 1,
      next: -1,
    };
    this.#audioId = a?.trackId ?? 0;
    this.#trex = new Map(
      info.tracks.map((t) => [t.trackId, t.defaultSampleFlags]),
    );
  }

  #onSegment(seg: Uint8Array, now: number): void {
    this.segments++;
    if (this.lastArrival) {
      this.maxGapMs = Math.max(this.maxGapMs, now - this.lastArrival);
    }
    this.lastArrival = now;
    const v = parseFragment(seg, this.#trex).tracks.find((t) =>
      t.trackId === this.#video.id
    );
    if (v) {
      if (this.#video.next >= 0 && v.baseDecodeTime !== this.#video.next) {
        this.holes++;
      }
      this.#video.next = v.baseDecodeTime + v.duration;
      this.videoSeconds += v.duration / this.#video.timescale;
    }
    const loud =
      sampleSizes(seg, this.#audioId).filter((s) => s > LOUD_AU_BYTES).length;
    if (loud === 0) {
      this.quietRun++;
      return;
    }
    this.quietRun = 0;
    if (this.pendingSince === null) return;
    // The first access unit whose window reaches the onset decodes to the overlap of
    // the silence before it; the onset is playable once the next one is here too.
    this.#pendingLoud += loud;
    if (this.#pendingLoud >= 2) {
      this.latencies.push(now - this.pendingSince);
      this.pendingSince = null;
    }
  }

  /** The engine sent the first agent audio of a response at `at` (this process's clock). */
  arm(at: number): void {
    this.pendingSince = at;
    this.#pendingLoud = 0;
  }

  /** Resets the window counters (timeline, gaps) at the start of a measurement. */
  resetWindow(): void {
    this.videoSeconds = 0;
    this.maxGapMs = 0;
    this.holes = 0;
    this.latencies.length = 0;
    this.errors.length = 0;
  }
}
