/**
 * A talking clip of a prepared portrait, rendered the way a live session renders it:
 * the built-in renderer (lib/render/builtin.ts) with the photo painters, a viewer
 * attached, the agent's turn pushed as audio after an idle lead, the session's own
 * encoder writing fMP4. Its clock is stepped by hand, one frame at a time and no
 * faster than the encoder delivers, so the clip never depends on the machine's load.
 * Only the painter is wrapped, to time each frame it paints.
 */
import { memoryLogger } from "../../lib/log.ts";
import {
  createBuiltinRenderer,
  type RenderClock,
} from "../../lib/render/builtin.ts";
import { isThreadPainter, type Painter } from "../../lib/render/painter.ts";
import { photoPainters } from "../../lib/render/photo/mod.ts";
import type { PhotoAvatar } from "../../lib/render/photo/types.ts";
import type { RenderSink } from "../../lib/ports/render.ts";
import { STREAM_RATE } from "../../lib/render/voice.ts";

const FRAME_MS = 40;

/** A render clock moved only by `advance`. */
class StepClock implements RenderClock {
  t = 0;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  now = (): number => this.t;
  setTimer(fn: () => void, ms: number): number {
    this.#timers.set(this.#next, { at: this.t + Math.max(0, ms), fn });
    return this.#next++;
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
}

/** Collects the stream; `until` waits (real time, bounded) for a condition. */
class Collector implements RenderSink {
  init: Uint8Array | null = null;
  segments: Uint8Array[] = [];
  error: Error | null = null;
  #wake: Array<() => void> = [];
  onInit(_mime: string, init: Uint8Array): void {
    this.init = init;
    this.#notify();
  }
  onSegment(segment: Uint8Array): void {
    this.segments.push(segment);
    this.#notify();
  }
  onError(err: Error): void {
    this.error = err;
    this.#notify();
  }
  #notify(): void {
    for (const w of this.#wake.splice(0)) w();
  }
  async until(cond: () => boolean, limitMs = 20_000): Promise<void> {
    const end = performance.now() + limitMs;
    while (!cond()) {
      if (this.error) throw this.error;
      const left = end - performance.now();
      if (left <= 0) throw new Error("the encoder stopped delivering");
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        this.#wake.push(() => (clearTimeout(t), r()));
      });
    }
  }
}

/** The clip: its fMP4 bytes and the painter's milliseconds per painted frame. */
export interface Clip {
  mp4: Uint8Array;
  paintMs: number[];
}

/**
 * Renders `frames` frames of `avatar`: the user speaking for `listenFrames` (the
 * avatar listens), quiet up to `leadFrames`, then `pcm` (48 kHz) pushed as the
 * agent's turn, then idle again to the end.
 */
export async function renderClip(
  avatar: PhotoAvatar,
  pcm: Int16Array,
  leadFrames: number,
  frames: number,
  listenFrames = 0,
): Promise<Clip> {
  const paintMs: number[] = [];
  const source = photoPainters((tenant, id) =>
    Promise.resolve(
      tenant === avatar.tenantId && id === avatar.avatarId ? avatar : null,
    )
  );
  const clock = new StepClock();
  const onClose: Array<() => void | Promise<void>> = [];
  const log = memoryLogger();
  const backend = createBuiltinRenderer({ log, onClose }, {
    clock,
    painters: async (o) => {
      // (In this process: no paint pool was given.)
      const p = await source(o);
      return p && !isThreadPainter(p) ? timed(p, paintMs) : p;
    },
  });
  const session = await backend.open({
    sessionId: `session:eval:${avatar.avatarId}`,
    tenantId: avatar.tenantId,
    avatarId: avatar.avatarId,
    bgId: "",
  }).catch((err) => {
    throw new Error(`${err.message}: ${log.lines.join(" ").slice(-400)}`);
  });
  const sink = new Collector();
  try {
    session.attach(sink);
    for (let k = 0; k < frames; k++) {
      if (k === 0 && listenFrames > 0) session.listen(true);
      if (k === listenFrames && listenFrames > 0) session.listen(false);
      if (k === leadFrames && pcm.length > 0) {
        if (!session.pushAudio(pcm, STREAM_RATE, "turn")) {
          throw new Error("the session refused the turn's audio");
        }
        session.endAudio("turn");
      }
      clock.advance(FRAME_MS);
      // Never more than a second ahead of the encoder: a live session is paced by
      // the wall clock, so its encoder is never far behind either.
      await sink.until(() => sink.segments.length >= k - 25);
    }
    await sink.until(() => sink.segments.length >= frames - 5);
  } finally {
    await session.stop({ graceful: true, timeoutMs: 20_000 });
    await backend.close();
  }
  if (!sink.init) throw new Error("no init segment");
  const parts = [sink.init, ...sink.segments];
  const mp4 = new Uint8Array(parts.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of parts) (mp4.set(b, at), at += b.length);
  return { mp4, paintMs };
}

/** `p` with each `paint` timed into `ms`. */
function timed(p: Painter, ms: number[]): Painter {
  return {
    width: p.width,
    height: p.height,
    paint(f, state, weights) {
      const t0 = performance.now();
      p.paint(f, state, weights);
      ms.push(performance.now() - t0);
    },
    paintAlpha: p.paintAlpha?.bind(p),
  };
}
