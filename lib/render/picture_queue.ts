/**
 * The frames of a built-in session whose painter is on another thread (./paint_pool/):
 * each frame's audio waits here, in order, for its picture, and both are written
 * together once every frame before them has been. A frame may have no picture of its
 * own (a catch-up frame, or the painter already `MAX_AHEAD` pictures behind): it shows
 * the last one again. The audio a frame carries counts as written for the timeline's
 * positions (`pendingFor`), so speech and latency marks land where they will be.
 */
import type { ThreadPainter } from "./painter.ts";
import type {
  FrameFace,
  FramePictures,
  FrameWriter,
  QueuedFrame,
} from "./picture.ts";

/** Pictures a session may have asked for and not got before frames reuse the last. */
export const MAX_AHEAD = 3;

interface Entry<F> {
  frame: F;
  /** "wait" until its picture came (or it asked for none). */
  state: "wait" | "done";
  picture: Uint8Array | null;
  err: Error | null;
}

export class PictureQueue<F extends QueuedFrame<unknown, unknown>>
  implements FramePictures<F> {
  readonly codedHeight: number;
  #q: Entry<F>[] = [];
  #closed = false;

  constructor(
    private readonly painter: ThreadPainter,
    private readonly write: FrameWriter<F>,
  ) {
    this.codedHeight = painter.alpha ? painter.height * 2 : painter.height;
  }

  /** Audio samples queued here for `target` (a run or an RTP output). */
  pendingFor(target: F["run"] | F["rtp"]): number {
    let n = 0;
    for (const e of this.#q) {
      if (e.frame.run === target || e.frame.rtp === target) {
        n += e.frame.audio.byteLength >> 1;
      }
    }
    return n;
  }

  /**
   * Queues a frame; with `face`, asks for its picture unless the painter is
   * `MAX_AHEAD` behind. Returns whether it asked.
   */
  push(frame: F, face: FrameFace | null): boolean {
    const asked = face !== null && this.painter.pending < MAX_AHEAD;
    const e: Entry<F> = {
      frame,
      state: asked ? "wait" : "done",
      picture: null,
      err: null,
    };
    this.#q.push(e);
    if (asked) {
      this.painter.picture(face.state, face.weights).then(
        (p) => (e.picture = p, e.state = "done", this.#flush()),
        (err) => (e.err = err, e.state = "done", this.#flush()),
      );
    } else this.#flush();
    return asked;
  }

  /** Drops every queued frame (the session stopped). */
  close(): void {
    this.#closed = true;
    this.#q = [];
  }

  #flush(): void {
    while (!this.#closed && this.#q.length > 0 && this.#q[0].state === "done") {
      const e = this.#q.shift()!;
      this.write(e.frame, e.picture, e.err);
    }
  }
}
