/**
 * The coded picture of each frame of a built-in render session (./builtin_session.ts):
 * the painter's I420 frame, or for a transparent session the stacked-alpha picture of
 * ./stacked.ts (the painter's alpha plane below the colour, twice as tall), with the
 * clock stamp of a latency-measuring session (./clock_stamp.ts) drawn on it.
 */
import { stampClock } from "./clock_stamp.ts";
import type { Frame } from "./draw.ts";
import type { FaceState } from "./face.ts";
import type { Painter } from "./painter.ts";
import { stackAlpha } from "./stacked.ts";

export class Pictures {
  /** The coded picture's height: twice the painter's for stacked alpha. */
  readonly codedHeight: number;
  #frame: Frame;
  /** The alpha plane of a transparent session (null: opaque). */
  #alpha: Uint8Array | null;

  constructor(
    private readonly painter: Painter,
    /** Transparent: the painter must have `paintAlpha`. */
    alpha: boolean,
    private readonly clockStamp: boolean,
  ) {
    this.#alpha = alpha ? new Uint8Array(painter.width * painter.height) : null;
    this.codedHeight = alpha ? painter.height * 2 : painter.height;
    this.#frame = {
      width: painter.width,
      height: painter.height,
      data: new Uint8Array(0),
    };
  }

  /** Paints the next picture, a new buffer (the encoders may still hold the last). */
  paint(face: FaceState, weights: Float64Array): Uint8Array {
    const painter = this.painter;
    const frame = this.#frame;
    frame.data = new Uint8Array(painter.width * painter.height * 3 / 2);
    painter.paint(frame, face, weights);
    let out = frame.data;
    if (this.#alpha) {
      painter.paintAlpha!(this.#alpha);
      out = stackAlpha(frame, this.#alpha);
    }
    if (this.clockStamp) {
      stampClock({ ...frame, height: this.codedHeight, data: out }, Date.now());
    }
    return out;
  }
}
