/**
 * Fixtures for the renderer tests: a hand-driven render clock, a recording sink, and
 * checks in /proc that the encoder processes the tests saw are gone.
 */
import { memoryLogger } from "../../../lib/log.ts";
import {
  createBuiltinRenderer,
  type RenderClock,
} from "../../../lib/render/builtin.ts";
import { createRenderWorker } from "../../../lib/render/worker.ts";
import { Encoder, liveEncoderPids } from "../../../lib/render/encoder.ts";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { child, parseBoxes } from "../../../lib/render/mp4_boxes.ts";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import type { RenderSink } from "../../../lib/ports/render.ts";

/** A render clock whose time moves only when the test advances it. */
export class ManualClock implements RenderClock {
  t = 0;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;

  now = (): number => this.t;

  setTimer(fn: () => void, ms: number): number {
    const id = this.#next++;
    this.#timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimer(id: unknown): void {
    this.#timers.delete(id as number);
  }

  /** Moves time forward by `ms`, firing due timers in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.#timers) {
        if (e[1].at <= end && (!first || e[1].at < first[1].at)) first = e;
      }
      if (!first) break;
      this.#timers.delete(first[0]);
      this.t = Math.max(this.t, first[1].at);
      first[1].fn();
    }
    this.t = end;
  }

  /** Jumps `ms` ahead at once, then fires the timers that are now overdue (a stall). */
  jump(ms: number): void {
    this.t += ms;
    this.advance(0);
  }

  get pending(): number {
    return this.#timers.size;
  }
}

/** A sink that records everything and lets a test wait for a condition. */
export class RecordingSink implements RenderSink {
  inits: Array<{ mime: string; init: Uint8Array }> = [];
  segments: Uint8Array[] = [];
  errors: Error[] = [];
  #waiters: Array<() => void> = [];

  onInit(mime: string, init: Uint8Array): void {
    notePids();
    this.inits.push({ mime, init });
    this.#wake();
  }
  onSegment(segment: Uint8Array): void {
    this.segments.push(segment);
    this.#wake();
  }
  onError(err: Error): void {
    this.errors.push(err);
    this.#wake();
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Resolves once `cond()` holds; rejects after `limitMs` of real time (a hang guard). */
  async until(cond: () => boolean, limitMs = 15_000): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const guard = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("condition not reached")),
        limitMs,
      );
    });
    try {
      while (!cond()) {
        await Promise.race([
          new Promise<void>((r) => this.#waiters.push(r)),
          guard,
        ]);
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Encoder pids seen by this test module. Tests run in parallel inside one process, so
 * "no ffmpeg of ours remains" is checked on the pids this module saw, not on all the
 * process's children.
 */
const seenPids = new Set<number>();

/** Records the encoder pids running now. */
export function notePids(): void {
  for (const pid of liveEncoderPids()) seenPids.add(pid);
}

/** Polls `cond` every 10 ms until it holds; rejects after `limitMs` (a hang guard). */
export async function poll(
  cond: () => boolean,
  limitMs = 10_000,
): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Whether a process with this pid exists (zombies included: /proc/pid stays until reaped). */
export function pidExists(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Asserts no encoder of this module runs, and none it ever saw is alive or a zombie. */
export function assertNoEncoders(): void {
  notePids();
  if (liveEncoderPids().length > 0) {
    throw new Error(`encoders still running: ${liveEncoderPids()}`);
  }
  const left = [...seenPids].filter(pidExists);
  if (left.length > 0) throw new Error(`processes left behind: ${left}`);
}

/** Per-track timeline facts of a recorded stream, for contiguity assertions. */
export function timelines(
  init: Uint8Array,
  segments: Uint8Array[],
): Map<number, Array<{ start: number; duration: number; sync: boolean }>> {
  const info = parseInit(init);
  const defaults = new Map(
    info.tracks.map((t) => [t.trackId, t.defaultSampleFlags]),
  );
  const out = new Map<
    number,
    Array<{ start: number; duration: number; sync: boolean }>
  >();
  for (const seg of segments) {
    const types = parseBoxes(seg).map((b) => b.type);
    if (types.join(",") !== "moof,mdat") {
      throw new Error(`segment is ${types.join(",")}`);
    }
    for (const t of parseFragment(seg, defaults).tracks) {
      const list = out.get(t.trackId) ?? [];
      list.push({
        start: t.baseDecodeTime,
        duration: t.duration,
        sync: t.firstSampleSync,
      });
      out.set(t.trackId, list);
    }
  }
  return out;
}

/** A sine tone, PCM16 mono. */
export function tone(
  seconds: number,
  rate: number,
  hz = 220,
  amplitude = 20000,
): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i++) {
    out[i] = Math.round(amplitude * Math.sin(2 * Math.PI * hz * i / rate));
  }
  return out;
}

/** The render worker's bearer token in tests. */
export const WORKER_TOKEN = "worker-token-0123456789abcdef";

/** A real render worker (built-in renderer at 128×128, real clock) on a loopback port. */
export function startWorker(): {
  url: string;
  log: ReturnType<typeof memoryLogger>;
  close(): Promise<void>;
} {
  const log = memoryLogger();
  const onClose: Array<() => void | Promise<void>> = [];
  const worker = createRenderWorker({
    backend: createBuiltinRenderer({ log, onClose }, {
      width: 128,
      height: 128,
    }),
    token: WORKER_TOKEN,
    log,
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    worker.handler,
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    log,
    async close() {
      await worker.close();
      for (const hook of onClose) await hook();
      await server.shutdown();
    },
  };
}

/**
 * Real fMP4 from the encoder: `frames` frames of a moving test pattern (written as fast
 * as ffmpeg takes them) with silence, 25 fps, keyframes every 25. Throws when the
 * encoder fails or does not stop cleanly.
 */
export async function encodeSample(
  width: number,
  height: number,
  frames: number,
): Promise<{ init: Uint8Array; segments: Uint8Array[] }> {
  const inits: Uint8Array[] = [];
  const segments: Uint8Array[] = [];
  const failures: Error[] = [];
  const enc = new Encoder({
    ffmpeg: await ffmpegPath(),
    width,
    height,
    fps: 25,
    sampleRate: 48000,
    maxQueuedFrames: frames,
  }, {
    onInit: (b) => inits.push(b),
    onSegment: (b) => segments.push(b),
    onFailure: (e) => failures.push(e),
  });
  for (let n = 0; n < frames; n++) {
    const frame = new Uint8Array(width * height * 3 / 2).fill(128);
    for (let i = 0; i < width * height; i++) frame[i] = (i + n * 7) & 0xff;
    if (!enc.write(frame, new Uint8Array(1920 * 2))) {
      throw new Error(`encoder refused frame ${n}`);
    }
  }
  const r = await enc.stop({ graceful: true, timeoutMs: 10_000 });
  if (!r.clean || failures.length > 0 || inits.length !== 1) {
    throw new Error(
      `encoder: clean ${r.clean}, ${inits.length} init segments, failures: ${
        failures.join("; ")
      }`,
    );
  }
  return { init: inits[0], segments };
}

/** Width × height in the init segment's video track header (tkhd). */
export function videoSize(init: Uint8Array): string {
  const moov = parseBoxes(init).find((b) => b.type === "moov")!;
  const trak = child(init, moov, "trak")!;
  const tkhd = child(init, trak, "tkhd")!;
  const v = new DataView(init.buffer, init.byteOffset);
  // tkhd version 0: width and height (16.16 fixed point) at body offsets 76 and 80.
  const w = v.getUint32(tkhd.bodyStart + 76) >> 16;
  const h = v.getUint32(tkhd.bodyStart + 80) >> 16;
  return `${w}x${h}`;
}
