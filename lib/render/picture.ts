/**
 * The coded pictures of a built-in render session (./builtin_session.ts), frame by
 * frame: the painter's I420 frame, or for a transparent session the stacked-alpha
 * picture of ./stacked.ts (the painter's alpha plane below the colour, twice as tall).
 * A painter on this thread paints each frame's picture as the frame is made
 * (`Pictures`); one on another thread hands them back later (./picture_queue.ts).
 * Either way each frame goes to the session's writer in order, with its picture or
 * none (show the last again).
 */
import type { Frame } from "./draw.ts";
import type { FaceState } from "./face.ts";
import type { Painter } from "./painter.ts";
import { stampClock } from "./clock_stamp.ts";
import { stackAlpha } from "./stacked.ts";

/** One frame's audio and where it goes (the session's run and RTP output then). */
export interface QueuedFrame<Run, Rtp> {
  audio: Uint8Array;
  run: Run | null;
  rtp: Rtp | null;
  /** The run's position minus the RTP output's, frames not yet written included. */
  toRun: number | null;
}

/** The face a frame shows, when it asks for a picture of its own. */
export interface FrameFace {
  state: FaceState;
  weights: Float64Array;
}

/**
 * Writes a frame: its picture (null: show the last again), or the error that kept it
 * from being painted.
 */
export type FrameWriter<F> = (
  frame: F,
  picture: Uint8Array | null,
  err: Error | null,
) => void;

/** Where a session's frames get their pictures. */
export interface FramePictures<F extends QueuedFrame<unknown, unknown>> {
  /** The coded picture's height: twice the painter's for stacked alpha. */
  readonly codedHeight: number;
  /** Audio samples of frames made and not yet written, bound for `target`. */
  pendingFor(target: F["run"] | F["rtp"]): number;
  /**
   * Takes a frame, with `face` to be painted (null: the last picture again); returns
   * whether its picture was asked for.
   */
  push(frame: F, face: FrameFace | null): boolean;
  /** Drops frames not yet written (the session stopped). */
  close(): void;
}

/** Pictures of a painter on this thread: painted and written as each frame is made. */
export class Pictures<F extends QueuedFrame<unknown, unknown>>
  implements FramePictures<F> {
  readonly codedHeight: number;
  #frame: Frame;
  /** The alpha plane of a transparent session (null: opaque). */
  #alpha: Uint8Array | null;

  constructor(
    private readonly painter: Painter,
    /** Transparent: the painter must have `paintAlpha`. */
    alpha: boolean,
    private readonly write: FrameWriter<F>,
  ) {
    this.#alpha = alpha ? new Uint8Array(painter.width * painter.height) : null;
    this.codedHeight = alpha ? painter.height * 2 : painter.height;
    this.#frame = {
      width: painter.width,
      height: painter.height,
      data: new Uint8Array(0),
    };
  }

  pendingFor(): number {
    return 0;
  }

  push(frame: F, face: FrameFace | null): boolean {
    this.write(frame, face ? this.#paint(face) : null, null);
    return face !== null;
  }

  close(): void {}

  /** Paints the next picture, a new buffer (the encoders may still hold the last). */
  #paint({ state, weights }: FrameFace): Uint8Array {
    const painter = this.painter;
    const frame = this.#frame;
    frame.data = new Uint8Array(painter.width * painter.height * 3 / 2);
    painter.paint(frame, state, weights);
    if (!this.#alpha) return frame.data;
    painter.paintAlpha!(this.#alpha);
    return stackAlpha(frame, this.#alpha);
  }
}

/**
 * The picture each frame written shows: its own, or the last one again (black before
 * any: the first frame of a painter that failed at once), with the wall clock stamped
 * on each new one in a latency-measuring session (./clock_stamp.ts).
 */
export class ShownPicture {
  #last: Uint8Array | null = null;

  constructor(
    private readonly width: number,
    /** The coded picture's height (twice the painter's for stacked alpha). */
    private readonly height: number,
    private readonly clockStamp: boolean,
    /** Hears each frame: whether its picture was painted for it. */
    private readonly onFrame?: (painted: boolean) => void,
  ) {}

  /** Whether a picture was shown yet. */
  get any(): boolean {
    return this.#last !== null;
  }

  /** What the next frame shows, given its own picture (null: none). */
  next(picture: Uint8Array | null): Uint8Array {
    this.onFrame?.(picture !== null);
    if (picture) {
      if (this.clockStamp) {
        const { width, height } = this;
        stampClock({ width, height, data: picture }, Date.now());
      }
      this.#last = picture;
    }
    if (!this.#last) {
      const n = this.width * this.height;
      this.#last = new Uint8Array(n * 3 / 2).fill(16, 0, n).fill(128, n);
    }
    return this.#last;
  }
}
