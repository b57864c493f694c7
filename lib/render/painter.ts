/**
 * The painter port: what draws a session's frames. The built-in session (render loop,
 * audio, encoders) is the same for every avatar; a painter turns each frame's face state
 * into pixels — the drawn cartoon of the catalog (./draw.ts) or a tenant's photo
 * (./photo/). Painters are opened by the render backend and owned by one session.
 */
import type { AvatarDef, BackgroundDef } from "../avatars.ts";
import { drawAvatar, drawAvatarAlpha } from "./draw.ts";
import type { FaceState } from "./face.ts";
import type { Frame } from "./raster.ts";
import type { RenderOpenOptions } from "../ports/render.ts";

export interface Painter {
  /** Frame size in pixels (even). */
  readonly width: number;
  readonly height: number;
  /**
   * Draws one I420 frame (`width`×`height`, BT.601 limited range) of the face in
   * `state` into `f`, overwriting it. `weights` are the smoothed viseme weights of the
   * frame, in `VISEMES` order (./visemes.ts).
   */
  paint(f: Frame, state: FaceState, weights: Float64Array): void;
  /**
   * Transparent backgrounds only (DECISIONS 6): writes the alpha of the frame last
   * painted into `alpha` (`width`×`height`, 0 transparent … 255 opaque).
   */
  paintAlpha?(alpha: Uint8Array): void;
}

/**
 * A painter on another thread (./paint_pool/): each coded picture is painted there (the
 * colour, with the alpha stacked below it on a transparent background, as
 * ./picture.ts makes it) and handed back.
 */
export interface ThreadPainter {
  readonly width: number;
  readonly height: number;
  /** Whether pictures carry the alpha stacked below the colour (twice as tall). */
  readonly alpha: boolean;
  /** Pictures asked for and not yet answered. */
  readonly pending: number;
  /** Ended (closed, or failed for good): no picture will come. */
  readonly failed: boolean;
  /**
   * The picture of the face in `state`; rejects when its thread failed (it is
   * restarted: later pictures are painted again) or the painter is closed.
   */
  picture(state: FaceState, weights: Float64Array): Promise<Uint8Array>;
  /** Ends the painter; its pending pictures reject. */
  close(): void;
}

/**
 * Opens the painter of an avatar a catalog does not hold (a tenant's photo avatar):
 * undefined when `options.avatarId` is not one of its own; rejects with
 * `RenderStartError` when it is but cannot be painted.
 */
export type PainterSource = (
  options: RenderOpenOptions,
) => Promise<Painter | ThreadPainter | undefined>;

/** Whether `p` paints on another thread. */
export function isThreadPainter(
  p: Painter | ThreadPainter,
): p is ThreadPainter {
  return "picture" in p;
}

/**
 * The drawn cartoon of the catalog as a painter; its alpha is the exact outline of the
 * figure last painted.
 */
export function cartoonPainter(
  avatar: AvatarDef,
  bg: BackgroundDef,
  width: number,
  height: number,
): Painter {
  let last: FaceState | null = null;
  return {
    width,
    height,
    paint: (f, state) => {
      last = state;
      drawAvatar(f, avatar, bg, state);
    },
    paintAlpha: (alpha) => {
      if (last) drawAvatarAlpha(alpha, width, height, avatar, last);
      else alpha.fill(0);
    },
  };
}
