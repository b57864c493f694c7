/**
 * What the paint pool (./pool.ts) and its workers (./worker.ts) say to each other. Both
 * ends are this codebase, on one process: the messages are typed, not parsed (nothing
 * here comes from outside; the avatar was parsed when it was stored).
 */
import type { FaceState } from "../face.ts";
import type { PhotoAvatar } from "../photo/types.ts";

/**
 * How a test makes a worker fail or lag: throw out of its handler, stop answering, or
 * take a second longer over its next open.
 */
export type PaintFault = "crash" | "hang" | "slow-open";

export type ToPainter =
  /** Opens painter `id` on `avatar` (`bgId` as the session asked: "" the photo's own). */
  | {
    kind: "open";
    id: number;
    avatar: PhotoAvatar;
    bgId: string;
    seed: number;
  }
  /** Paints picture `seq` of painter `id`. */
  | {
    kind: "paint";
    id: number;
    seq: number;
    state: FaceState;
    weights: Float64Array;
  }
  | { kind: "close"; id: number }
  | { kind: "fault"; fault: PaintFault };

export type FromPainter =
  | { kind: "opened"; id: number }
  /** The coded picture (stacked with its alpha on a transparent background). */
  | { kind: "picture"; id: number; seq: number; picture: Uint8Array }
  /** Painter `id` could not open (`seq` −1) or paint picture `seq`. */
  | { kind: "failed"; id: number; seq: number; message: string };
