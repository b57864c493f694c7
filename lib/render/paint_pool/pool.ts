/**
 * The paint pool (issue 30): photo avatars are painted on worker threads, not on the
 * service's event loop, so the main thread only schedules, muxes and talks to sockets.
 * One worker per core by default; each session's painter lives on the least loaded one
 * (by pixels painted a frame). Pictures come back as transferred buffers (no copy).
 *
 * A worker that crashes, or leaves a picture unanswered for `hangMs`, is ended and
 * replaced: its sessions' pending pictures reject (their streams restart, ./
 * ../builtin_session.ts) and their painters are opened again on the new worker. The
 * process goes on. Where no Worker can be started, `open` answers null and the caller
 * paints on its own thread.
 */
import type { Logger } from "../../log.ts";
import type { FaceState } from "../face.ts";
import type { ThreadPainter } from "../painter.ts";
import type { PhotoAvatar } from "../photo/types.ts";
import type { FromPainter, PaintFault, ToPainter } from "./messages.ts";

export interface PaintPoolOptions {
  log: Logger;
  /** Workers; by default one per core. */
  size?: number;
  /** A picture unanswered this long (ms) ends its worker as hung. */
  hangMs?: number;
}

/** Longest a worker may take over one picture before it is replaced (ms). */
export const PAINT_HANG_MS = 2_000;

/**
 * Longest an open may take, and what waits behind it on its worker (ms): a new worker
 * loads its modules, a painter builds its rig (a 720×1280 one takes longer).
 */
export const OPEN_TIMEOUT_MS = 15_000;

/** Failed workers a painter may be on before it is closed. */
export const MAX_FAILURES = 3;

interface Pending {
  resolve(picture: Uint8Array): void;
  reject(err: Error): void;
  at: number;
}

interface Slot {
  /** Null only while it is replaced. */
  worker: Worker | null;
  /**
   * Opens posted to its worker and not yet answered: while there are any, pictures
   * wait behind them (a new worker loads its modules, a painter builds its rig).
   */
  opening: number;
  /** When its last open was answered: what waited behind it is timed from then. */
  freeSince: number;
  painters: Set<PoolPainter>;
  /** Pixels its painters paint a frame. */
  load: number;
}

class PoolPainter implements ThreadPainter {
  readonly width: number;
  readonly height: number;
  readonly alpha: boolean;
  #seq = 0;
  readonly waiting = new Map<number, Pending>();
  opened: Pending | null = null;
  closed = false;
  /** Workers that failed while painting it. */
  failures = 0;

  constructor(
    readonly id: number,
    readonly open: Extract<ToPainter, { kind: "open" }>,
    public slot: Slot,
    private readonly pool: PaintPool,
  ) {
    this.width = open.avatar.width;
    this.height = open.avatar.height;
    this.alpha = open.bgId === "transparent";
  }

  get pending(): number {
    return this.waiting.size;
  }

  get failed(): boolean {
    return this.closed;
  }

  picture(state: FaceState, weights: Float64Array): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new Error("painter closed"));
    const seq = this.#seq++;
    return new Promise((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject, at: performance.now() });
      this.pool.post(this.slot, {
        kind: "paint",
        id: this.id,
        seq,
        state,
        weights,
      });
    });
  }

  /** Rejects every pending picture with `err`. */
  fail(err: Error): void {
    for (const p of this.waiting.values()) p.reject(err);
    this.waiting.clear();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const err = new Error("painter closed");
    const opening = this.opened;
    this.opened = null;
    opening?.reject(err);
    this.fail(err);
    this.pool.forget(this);
  }
}

export class PaintPool {
  readonly size: number;
  readonly #log: Logger;
  readonly #hangMs: number;
  #slots: Slot[] = [];
  #painters = new Map<number, PoolPainter>();
  #nextId = 1;
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;
  /** Set once a Worker could not be started: `open` answers null from then on. */
  #unavailable = false;
  /** Workers replaced after a crash or a hang, since the pool started. */
  restarts = 0;

  constructor(options: PaintPoolOptions) {
    this.#log = options.log;
    this.size = Math.max(1, options.size ?? navigator.hardwareConcurrency ?? 1);
    this.#hangMs = options.hangMs ?? PAINT_HANG_MS;
  }

  /**
   * Opens `avatar`'s painter on a worker; null where no worker can be started (the
   * caller paints it itself); rejects when the avatar cannot be painted.
   */
  open(
    avatar: PhotoAvatar,
    bgId: string,
    seed: number,
  ): Promise<ThreadPainter | null> {
    if (this.#closed) return Promise.reject(new Error("paint pool closed"));
    const slot = this.#leastLoaded();
    if (!slot) return Promise.resolve(null);
    const id = this.#nextId++;
    const msg = { kind: "open", id, avatar, bgId, seed } as const;
    const p = new PoolPainter(id, msg, slot, this);
    slot.painters.add(p);
    slot.load += p.width * p.height;
    this.#painters.set(id, p);
    this.#watch();
    return new Promise((resolve, reject) => {
      p.opened = {
        resolve: () => resolve(p),
        reject: (err) => (p.close(), reject(err)),
        at: performance.now(),
      };
      this.post(slot, msg);
    });
  }

  /** Ends every worker; pending pictures reject. */
  close(): void {
    this.#closed = true;
    for (const p of [...this.#painters.values()]) p.close();
    for (const s of this.#slots) s.worker?.terminate();
    this.#slots = [];
    this.#unwatch();
  }

  /** Tests only: makes the worker painting `painter` crash or hang. */
  fault(painter: ThreadPainter, fault: PaintFault): void {
    const p = this.#painters.get((painter as PoolPainter).id);
    if (p) this.post(p.slot, { kind: "fault", fault });
  }

  post(slot: Slot, msg: ToPainter): void {
    if (!slot.worker) return;
    if (msg.kind === "open") slot.opening++;
    slot.worker.postMessage(msg);
  }

  forget(p: PoolPainter): void {
    if (!this.#painters.delete(p.id)) return;
    p.slot.painters.delete(p);
    p.slot.load -= p.width * p.height;
    this.post(p.slot, { kind: "close", id: p.id });
    if (this.#painters.size === 0) this.#unwatch();
  }

  #leastLoaded(): Slot | null {
    if (this.#unavailable) return null;
    if (this.#slots.length < this.size) {
      const slot: Slot = {
        worker: null,
        opening: 0,
        freeSince: 0,
        painters: new Set(),
        load: 0,
      };
      try {
        this.#spawn(slot);
        this.#slots.push(slot);
        return slot;
      } catch (err) {
        this.#unavailable = this.#slots.length === 0;
        this.#log.warn(
          this.#unavailable
            ? "paint workers could not start: photos are painted on the event loop"
            : "a paint worker could not start",
          { err },
        );
        if (this.#unavailable) return null;
      }
    }
    return this.#slots.reduce((a, b) => b.load < a.load ? b : a);
  }

  /** Starts `slot`'s worker (throws where a Worker cannot be started). */
  #spawn(slot: Slot): void {
    const worker = new Worker(new URL("./worker.ts", import.meta.url), {
      type: "module",
    });
    slot.worker = worker;
    slot.opening = 0;
    worker.onmessage = (e: MessageEvent<FromPainter>) => {
      if (slot.worker === worker) this.#answer(slot, e.data);
    };
    worker.onerror = (e: ErrorEvent) => {
      // Handled here: the process goes on.
      e.preventDefault();
      if (slot.worker === worker) this.#restart(slot, "crashed", e.message);
    };
    worker.onmessageerror = () => {
      if (slot.worker === worker) this.#restart(slot, "crashed", "message");
    };
  }

  #answer(slot: Slot, msg: FromPainter): void {
    if (msg.kind === "opened" || (msg.kind === "failed" && msg.seq < 0)) {
      slot.opening = Math.max(0, slot.opening - 1);
      slot.freeSince = performance.now();
    }
    const p = this.#painters.get(msg.id);
    if (!p) return;
    if (msg.kind === "opened") {
      p.opened?.resolve(new Uint8Array(0));
      p.opened = null;
      return;
    }
    if (msg.kind === "failed" && msg.seq < 0) {
      const opened = p.opened;
      p.opened = null;
      // (Opened once, it could not open again on a new worker: it is done.)
      if (opened) opened.reject(new Error(msg.message));
      else p.close();
      return;
    }
    const w = p.waiting.get(msg.seq);
    if (!w) return;
    p.waiting.delete(msg.seq);
    if (msg.kind === "picture") w.resolve(msg.picture);
    else w.reject(new Error(msg.message));
  }

  /**
   * Replaces `slot`'s worker; its painters open again on the new one, but a painter
   * that was on `MAX_FAILURES` failed workers is closed (an avatar that ends every
   * worker it is painted on must not end them for ever).
   */
  #restart(slot: Slot, why: "crashed" | "hung", detail: string): void {
    this.restarts++;
    this.#log.warn("paint worker replaced", {
      why,
      detail,
      painters: slot.painters.size,
    });
    slot.worker?.terminate();
    slot.worker = null;
    const err = new Error(`paint worker ${why}`);
    const painters = [...slot.painters];
    for (const p of painters) {
      p.failures++;
      p.fail(err);
      if (p.failures >= MAX_FAILURES) p.close();
    }
    // A worker with nobody left to paint for is not started again (one whose
    // module cannot load would otherwise be restarted for ever).
    if (slot.painters.size === 0) {
      this.#slots = this.#slots.filter((s) => s !== slot);
      return;
    }
    try {
      this.#spawn(slot);
    } catch (cause) {
      this.#log.error("a paint worker could not restart", { err: cause });
      for (const p of slot.painters) p.close();
      this.#slots = this.#slots.filter((s) => s !== slot);
      return;
    }
    for (const p of slot.painters) this.post(slot, p.open);
  }

  /** Checks for hung workers while any painter is open. */
  #watch(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      const now = performance.now();
      for (const slot of this.#slots) {
        // (While opens are under way, what waits behind them has OPEN_TIMEOUT_MS.)
        const limit = slot.opening > 0 ? OPEN_TIMEOUT_MS : this.#hangMs;
        let oldest = Infinity;
        for (const p of slot.painters) {
          if (p.opened) oldest = Math.min(oldest, p.opened.at);
          for (const w of p.waiting.values()) {
            oldest = Math.min(oldest, Math.max(w.at, slot.freeSince));
          }
        }
        if (now - oldest > limit) {
          this.#restart(slot, "hung", `${Math.round(now - oldest)} ms`);
        }
      }
    }, Math.max(50, this.#hangMs / 4));
    Deno.unrefTimer(this.#timer as unknown as number);
  }

  #unwatch(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
