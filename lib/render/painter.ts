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
 * Opens the painter of an avatar a catalog does not hold (a tenant's photo avatar):
 * undefined when `options.avatarId` is not one of its own; rejects with
 * `RenderStartError` when it is but cannot be painted.
 */
export type PainterSource = (
  options: RenderOpenOptions,
) => Promise<Painter | undefined>;

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
