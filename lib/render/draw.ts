/**
 * The avatar, drawn straight into I420 (yuv420p) frames with ./raster.ts: background
 * gradient, shoulders and shirt (rising with the breath), neck, hair, head (moved and
 * tilted by ./face.ts), eyes that look around and blink, brows lifted on stressed
 * syllables, and the mouth, jaw and cheeks of ./mouth.ts.
 */
import type { AvatarDef, BackgroundDef } from "../avatars.ts";
import type { FaceState } from "./face.ts";
import { drawJaw, drawMouth } from "./mouth.ts";
import {
  backgroundPlanes,
  ellipse,
  type Frame,
  mix,
  type Rgb,
  toYuv,
  type Yuv,
} from "./raster.ts";

export { createFrame, type Frame, type Rgb, toYuv } from "./raster.ts";
export type { FaceState } from "./face.ts";

/**
 * A box that holds the mouth, jaw and lips in every pose (head motion included), for
 * tests and the lip-sync benchmark: x, y, width, height in pixels.
 */
export function mouthRegion(
  width: number,
  height: number,
): { x: number; y: number; w: number; h: number } {
  const s = Math.min(width, height);
  const cy = height * 0.42 + s * 0.104;
  return {
    x: Math.round(width / 2 - s * 0.12),
    y: Math.round(cy - s * 0.05),
    w: Math.round(s * 0.24),
    h: Math.round(s * 0.17),
  };
}

/** The colours of one avatar, converted once. */
interface Palette {
  hair: Yuv;
  shirt: Yuv;
  collar: Yuv;
  neck: Yuv;
  skin: Yuv;
  iris: Yuv;
  lid: Yuv;
  brow: Yuv;
  nose: Yuv;
}

const palettes = new Map<string, Palette>();
const WHITE = toYuv([245, 245, 240]);
const PUPIL = toYuv([15, 15, 20]);

function paletteOf(avatar: AvatarDef): Palette {
  let p = palettes.get(avatar.id);
  if (p) return p;
  const c = avatar.palette;
  const black: Rgb = [0, 0, 0];
  p = {
    hair: toYuv(c.hair),
    shirt: toYuv(c.shirt),
    collar: toYuv(mix(c.shirt, black, 0.25)),
    neck: toYuv(mix(c.skin, black, 0.12)),
    skin: toYuv(c.skin),
    iris: toYuv(c.eyes),
    lid: toYuv(mix(c.skin, black, 0.18)),
    brow: toYuv(mix(c.hair, black, 0.2)),
    nose: toYuv(mix(c.skin, black, 0.15)),
  };
  palettes.set(avatar.id, p);
  return p;
}

/** Where the head is in one frame, for the features drawn on it. */
interface Figure {
  cx: number;
  headCy: number;
  headRx: number;
  headRy: number;
  tilt: number;
  at: (y: number) => number;
}

/** The colours of the figure's outline: hair, body, neck and skin. */
type FigureColours = Pick<
  Palette,
  "hair" | "shirt" | "collar" | "neck" | "skin"
>;

/**
 * The figure whose outline the avatar has: hair, shoulders and shirt (rising with the
 * breath), neck, ears, head and hair cap. Returns where the head is.
 */
function drawFigure(
  f: Frame,
  avatar: AvatarDef,
  p: FigureColours,
  state: FaceState,
): Figure {
  const { width: w, height: h } = f;
  const s = Math.min(w, h);
  const breathe = Math.sin(state.t * Math.PI * 2 / 4.2);
  // Whole pixels and tilt steps of 1/256: the head then stands still between steps,
  // which the encoder codes as skipped blocks, instead of shimmering every frame.
  const tilt = Math.round(state.head.tilt * 256) / 256;

  const cx = Math.round(w / 2 + state.head.x * s);
  const headCy = Math.round(h * 0.42 + breathe * s * 0.004 + state.head.y * s);
  const headRy = s * 0.2;
  const headRx = headRy * avatar.headAspect;
  const pivotY = headCy + headRy;
  const lean = { shear: tilt, pivotY };
  const at = (y: number) => cx + tilt * (pivotY - y);

  if (avatar.hairStyle === "long") {
    // Long hair hangs behind the neck and shoulders.
    ellipse(
      f,
      cx,
      headCy + headRy * 0.45,
      headRx * 1.25,
      headRy * 1.25,
      p.hair,
      lean,
    );
  }
  // Body: shoulders and shirt rise and fall with the breath.
  const shoulderY = Math.round(h * 0.98 - breathe * s * 0.008);
  ellipse(f, w / 2, shoulderY, s * 0.36, s * 0.3, p.shirt);
  ellipse(f, w / 2, shoulderY - s * 0.26, s * 0.09, s * 0.05, p.collar);
  // Neck.
  ellipse(
    f,
    (cx + w / 2) / 2,
    headCy + headRy * 0.95,
    headRx * 0.42,
    headRy * 0.45,
    p.neck,
  );
  if (avatar.hairStyle === "bun") {
    ellipse(
      f,
      at(headCy - headRy * 1.12),
      headCy - headRy * 1.12,
      headRx * 0.42,
      headRy * 0.32,
      p.hair,
    );
  }
  // Ears, head.
  for (const side of [-1, 1]) {
    ellipse(
      f,
      cx + side * headRx * 0.98,
      headCy + headRy * 0.05,
      headRx * 0.14,
      headRy * 0.18,
      p.skin,
      lean,
    );
  }
  ellipse(f, cx, headCy, headRx, headRy, p.skin, lean);
  // Hair cap over the top of the head.
  const capBottom = headCy -
    headRy * (avatar.hairStyle === "short" ? 0.45 : 0.35);
  ellipse(f, cx, headCy - headRy * 0.12, headRx * 1.06, headRy * 0.98, p.hair, {
    ...lean,
    clipBottom: capBottom,
  });
  return { cx, headCy, headRx, headRy, tilt, at };
}

/** Full coverage in an alpha plane drawn as luma. */
const OPAQUE: Yuv = { y: 255, u: 128, v: 128 };
const MASK: FigureColours = {
  hair: OPAQUE,
  shirt: OPAQUE,
  collar: OPAQUE,
  neck: OPAQUE,
  skin: OPAQUE,
};
const scratch = new Map<string, Uint8Array>();

/**
 * The avatar's exact outline in `state` as an alpha plane (`width`×`height`, 0 outside,
 * 255 inside, edges anti-aliased): the figure and the dropped jaw, drawn in white on
 * black. The transparent background's alpha (DECISIONS 6).
 */
export function drawAvatarAlpha(
  alpha: Uint8Array,
  width: number,
  height: number,
  avatar: AvatarDef,
  state: FaceState,
): void {
  const key = `${width}x${height}`;
  let data = scratch.get(key);
  if (!data) scratch.set(key, data = new Uint8Array(width * height * 3 / 2));
  data.fill(0, 0, width * height);
  const f: Frame = { width, height, data };
  const g = drawFigure(f, avatar, MASK, state);
  drawJaw(f, { ...g, skin: [255, 255, 255] }, state.mouth, OPAQUE);
  alpha.set(data.subarray(0, width * height));
}

/** Draws one frame of `avatar` on `bg` in `state` into `f` (overwriting it). */
export function drawAvatar(
  f: Frame,
  avatar: AvatarDef,
  bg: BackgroundDef,
  state: FaceState,
): void {
  f.data.set(backgroundPlanes(bg, f.width, f.height));
  const p = paletteOf(avatar);
  const { cx, headCy, headRx, headRy, tilt, at } = drawFigure(
    f,
    avatar,
    p,
    state,
  );

  // Eyes: white, iris and pupil looking where the gaze points; lids close in a blink.
  const eyeY = headCy - headRy * 0.08;
  const eyeDx = headRx * 0.38;
  const eyeRx = headRx * 0.17;
  const eyeRy = headRy * 0.085;
  const open = 1 - Math.min(1, Math.max(0, state.blink));
  const lookX = state.gaze.x * eyeRx * 0.38;
  const lookY = state.gaze.y * eyeRy * 0.3;
  for (const side of [-1, 1]) {
    const ex = at(eyeY) + side * eyeDx;
    if (open > 0.15) {
      const ry = eyeRy * open;
      ellipse(f, ex, eyeY, eyeRx, ry, WHITE);
      const clip = { clipTop: eyeY - ry, clipBottom: eyeY + ry };
      ellipse(
        f,
        ex + lookX,
        eyeY + lookY,
        eyeRy * 0.95,
        eyeRy * 0.95 * open,
        p.iris,
        clip,
      );
      ellipse(
        f,
        ex + lookX,
        eyeY + lookY,
        eyeRy * 0.45,
        eyeRy * 0.45 * open,
        PUPIL,
        clip,
      );
    } else {
      ellipse(
        f,
        ex,
        eyeY + eyeRy * 0.3,
        eyeRx,
        Math.max(1, eyeRy * 0.18),
        p.lid,
      );
    }
    // Brows: lifted on stress, the outer end a little more.
    const browY = eyeY - headRy * (0.2 + 0.045 * state.brow);
    ellipse(f, ex, browY, eyeRx * 1.15, headRy * 0.03, p.brow, {
      shear: side * 0.08 * state.brow,
      pivotY: browY,
    });
  }
  // Nose: a soft shadow.
  ellipse(
    f,
    at(headCy + headRy * 0.22),
    headCy + headRy * 0.22,
    headRx * 0.09,
    headRy * 0.06,
    p.nose,
  );

  drawMouth(
    f,
    { cx, headCy, headRx, headRy, tilt, skin: avatar.palette.skin },
    state.mouth,
  );
}
