/**
 * A small software rasterizer that draws the avatar straight into I420 (yuv420p) frames:
 * background gradient, shoulders and shirt, neck, hair, head, eyes with blinks,
 * eyebrows and a mouth shaped by the voice. Shapes are ellipses filled span by span,
 * anti-aliased horizontally in luma; chroma is sampled at each 2×2 block's centre.
 */
import type { AvatarDef, BackgroundDef } from "../avatars.ts";

export type Rgb = readonly [number, number, number];

/** One I420 frame: Y plane, then U, then V (quarter size each). */
export interface Frame {
  width: number;
  height: number;
  data: Uint8Array;
}

/** What moves in a frame. */
export interface FaceState {
  /** Seconds since the session started (drives breathing and sway). */
  t: number;
  /** 0 closed … 1 fully open. */
  mouthOpen: number;
  /** 0 round ("o") … 1 wide ("ee"/"s"): the viseme's width. */
  mouthWide: number;
  /** 0 eyes open … 1 closed. */
  blink: number;
}

interface Yuv {
  y: number;
  u: number;
  v: number;
}

/** BT.601 limited-range YUV of an RGB colour (what x264 assumes by default). */
export function toYuv([r, g, b]: Rgb): Yuv {
  return {
    y: 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
    u: 128 + (-37.797 * r - 74.203 * g + 112 * b) / 255,
    v: 128 + (112 * r - 93.786 * g - 18.214 * b) / 255,
  };
}

/** Allocates a black I420 frame. */
export function createFrame(width: number, height: number): Frame {
  const data = new Uint8Array(width * height * 3 / 2);
  data.fill(16, 0, width * height);
  data.fill(128, width * height);
  return { width, height, data };
}

const bgCache = new Map<string, Uint8Array>();

/** The background gradient as a full I420 frame (cached per background and size). */
export function backgroundPlanes(
  bg: BackgroundDef,
  width: number,
  height: number,
): Uint8Array {
  const key = `${bg.id}:${width}x${height}`;
  const hit = bgCache.get(key);
  if (hit) return hit;
  const out = createFrame(width, height).data;
  const top = toYuv(bg.top);
  const bottom = toYuv(bg.bottom);
  const cw = width >> 1;
  const uOff = width * height;
  const vOff = uOff + cw * (height >> 1);
  for (let y = 0; y < height; y++) {
    const k = y / (height - 1);
    out.fill(
      Math.round(top.y + (bottom.y - top.y) * k),
      y * width,
      (y + 1) * width,
    );
    if ((y & 1) === 0) {
      const r = y >> 1;
      out.fill(
        Math.round(top.u + (bottom.u - top.u) * k),
        uOff + r * cw,
        uOff + (r + 1) * cw,
      );
      out.fill(
        Math.round(top.v + (bottom.v - top.v) * k),
        vOff + r * cw,
        vOff + (r + 1) * cw,
      );
    }
  }
  bgCache.set(key, out);
  return out;
}

/** Horizontal extent of a shape on a row (centre y of the row), or null when it misses. */
type RowSpan = (y: number) => [number, number] | null;

interface FillOptions {
  alpha?: number;
  /** Rows outside [clipTop, clipBottom) are not drawn. */
  clipTop?: number;
  clipBottom?: number;
}

function blend(dst: number, src: number, a: number): number {
  return dst + (src - dst) * a;
}

/** Fills a shape given by its row spans, in luma (anti-aliased) and chroma. */
function fill(
  f: Frame,
  top: number,
  bottom: number,
  span: RowSpan,
  color: Yuv,
  opts: FillOptions = {},
): void {
  const { width: w, height: h, data } = f;
  const alpha = opts.alpha ?? 1;
  const y0 = Math.max(0, Math.floor(top), Math.ceil(opts.clipTop ?? 0));
  const y1 = Math.min(h, Math.ceil(bottom), Math.floor(opts.clipBottom ?? h));
  for (let y = y0; y < y1; y++) {
    const s = span(y + 0.5);
    if (!s) continue;
    const [a, b] = s;
    const xa = Math.max(0, Math.floor(a));
    const xb = Math.min(w - 1, Math.floor(b));
    const row = y * w;
    for (let x = xa; x <= xb; x++) {
      const cover = Math.min(1, x + 1 - a, b - x);
      if (cover <= 0) continue;
      data[row + x] = blend(data[row + x], color.y, cover * alpha);
    }
  }
  const cw = w >> 1;
  const uOff = w * h;
  const vOff = uOff + cw * (h >> 1);
  for (let r = y0 >> 1; r < (y1 + 1) >> 1; r++) {
    const s = span(2 * r + 1);
    if (!s) continue;
    const xa = Math.max(0, Math.ceil(s[0] / 2 - 0.5));
    const xb = Math.min(cw - 1, Math.floor(s[1] / 2 - 0.5));
    for (let x = xa; x <= xb; x++) {
      const i = r * cw + x;
      data[uOff + i] = blend(data[uOff + i], color.u, alpha);
      data[vOff + i] = blend(data[vOff + i], color.v, alpha);
    }
  }
}

/**
 * A filled ellipse centred at (cx, cy). `shear` leans it: each row shifts by
 * shear × (pivotY − y), which is how the head tilts with the sway.
 */
function ellipse(
  f: Frame,
  cx: number,
  cy: number,
  rx: number,
  ry: number,
  color: Yuv,
  opts: FillOptions & { shear?: number; pivotY?: number } = {},
): void {
  if (rx <= 0 || ry <= 0) return;
  const shear = opts.shear ?? 0;
  const pivotY = opts.pivotY ?? cy;
  fill(
    f,
    cy - ry,
    cy + ry,
    (y) => {
      const d = (y - cy) / ry;
      if (d <= -1 || d >= 1) return null;
      const dx = rx * Math.sqrt(1 - d * d);
      const c = cx + shear * (pivotY - y);
      return [c - dx, c + dx];
    },
    color,
    opts,
  );
}

/** Where the mouth is drawn (for tests and debugging): x, y, width, height in pixels. */
export function mouthRegion(
  width: number,
  height: number,
): { x: number; y: number; w: number; h: number } {
  const s = Math.min(width, height);
  return {
    x: Math.round(width / 2 - s * 0.09),
    y: Math.round(height * 0.42 + s * 0.054),
    w: Math.round(s * 0.18),
    h: Math.round(s * 0.1),
  };
}

function mix(a: Rgb, b: Rgb, k: number): Rgb {
  return [
    a[0] + (b[0] - a[0]) * k,
    a[1] + (b[1] - a[1]) * k,
    a[2] + (b[2] - a[2]) * k,
  ];
}

/** Draws one frame of `avatar` on `bg` in `state` into `f` (overwriting it). */
export function drawAvatar(
  f: Frame,
  avatar: AvatarDef,
  bg: BackgroundDef,
  state: FaceState,
): void {
  const { width: w, height: h } = f;
  f.data.set(backgroundPlanes(bg, w, h));
  const s = Math.min(w, h);
  const p = avatar.palette;
  const breathe = Math.sin(state.t * Math.PI * 2 / 4.2);
  const swayX = Math.sin(state.t * Math.PI * 2 / 7.3) * s * 0.008;
  const tilt = Math.sin(state.t * Math.PI * 2 / 9.1) * 0.035;
  const nod = Math.sin(state.t * Math.PI * 2 / 5.7) * s * 0.004;

  const cx = w / 2 + swayX;
  const headCy = h * 0.42 + breathe * s * 0.004 + nod;
  const headRy = s * 0.2;
  const headRx = headRy * avatar.headAspect;
  const lean = { shear: tilt, pivotY: headCy + headRy };

  const hair = toYuv(p.hair);
  if (avatar.hairStyle === "long") {
    // Long hair hangs behind the neck and shoulders.
    ellipse(
      f,
      cx,
      headCy + headRy * 0.45,
      headRx * 1.25,
      headRy * 1.25,
      hair,
      lean,
    );
  }
  // Body: shoulders and shirt rise and fall with the breath.
  const shoulderY = h * 0.98 - breathe * s * 0.008;
  ellipse(f, w / 2, shoulderY, s * 0.36, s * 0.3, toYuv(p.shirt));
  ellipse(
    f,
    w / 2,
    shoulderY - s * 0.26,
    s * 0.09,
    s * 0.05,
    toYuv(mix(p.shirt, [0, 0, 0], 0.25)),
  );
  // Neck.
  ellipse(
    f,
    (cx + w / 2) / 2,
    headCy + headRy * 0.95,
    headRx * 0.42,
    headRy * 0.45,
    toYuv(mix(p.skin, [0, 0, 0], 0.12)),
  );

  if (avatar.hairStyle === "bun") {
    ellipse(
      f,
      cx + tilt * headRy * 1.3,
      headCy - headRy * 1.12,
      headRx * 0.42,
      headRy * 0.32,
      hair,
      lean,
    );
  }
  // Ears, head.
  const skin = toYuv(p.skin);
  ellipse(
    f,
    cx - headRx * 0.98,
    headCy + headRy * 0.05,
    headRx * 0.14,
    headRy * 0.18,
    skin,
    lean,
  );
  ellipse(
    f,
    cx + headRx * 0.98,
    headCy + headRy * 0.05,
    headRx * 0.14,
    headRy * 0.18,
    skin,
    lean,
  );
  ellipse(f, cx, headCy, headRx, headRy, skin, lean);
  // Hair cap over the top of the head.
  const capBottom = headCy -
    headRy * (avatar.hairStyle === "short" ? 0.45 : 0.35);
  ellipse(f, cx, headCy - headRy * 0.12, headRx * 1.06, headRy * 0.98, hair, {
    ...lean,
    clipBottom: capBottom,
  });

  // Eyes: white, iris, pupil; eyelids close over them when blinking.
  const eyeY = headCy - headRy * 0.08;
  const eyeDx = headRx * 0.38;
  const eyeRx = headRx * 0.17;
  const eyeRy = headRy * 0.085;
  const open = 1 - Math.min(1, Math.max(0, state.blink));
  const white = toYuv([245, 245, 240]);
  const iris = toYuv(p.eyes);
  const pupil = toYuv([15, 15, 20]);
  const lid = toYuv(mix(p.skin, [0, 0, 0], 0.18));
  for (const side of [-1, 1]) {
    const ex = cx + side * eyeDx + tilt * (headCy + headRy - eyeY);
    if (open > 0.15) {
      ellipse(f, ex, eyeY, eyeRx, eyeRy * open, white);
      ellipse(f, ex, eyeY, eyeRy * 0.95, eyeRy * 0.95 * open, iris);
      ellipse(f, ex, eyeY, eyeRy * 0.45, eyeRy * 0.45 * open, pupil);
    } else {
      ellipse(f, ex, eyeY + eyeRy * 0.3, eyeRx, Math.max(1, eyeRy * 0.18), lid);
    }
    // Eyebrows lift a little when the avatar speaks.
    const browY = eyeY - headRy * (0.2 + state.mouthOpen * 0.03);
    ellipse(
      f,
      ex,
      browY,
      eyeRx * 1.15,
      headRy * 0.03,
      toYuv(mix(p.hair, [0, 0, 0], 0.2)),
    );
  }
  // Nose: a soft shadow.
  ellipse(
    f,
    cx + tilt * headRy * 0.6,
    headCy + headRy * 0.22,
    headRx * 0.09,
    headRy * 0.06,
    toYuv(mix(p.skin, [0, 0, 0], 0.15)),
  );

  // Mouth: its height follows the voice, its width the viseme.
  const m = mouthRegion(w, h);
  const mouthCx = cx + tilt * (headCy + headRy - (m.y + m.h / 2)) * 0.5;
  const mouthCy = headCy + headRy * 0.52;
  const openK = Math.min(1, Math.max(0, state.mouthOpen));
  const mrx = headRx * (0.26 + 0.16 * state.mouthWide - 0.06 * openK);
  const mry = headRy * (0.025 + 0.17 * openK * (1 - 0.35 * state.mouthWide));
  const lips = toYuv(mix(p.skin, [170, 60, 70], 0.55));
  ellipse(f, mouthCx, mouthCy, mrx * 1.08, mry + headRy * 0.025, lips);
  if (openK > 0.05) {
    ellipse(f, mouthCx, mouthCy, mrx * 0.92, mry, toYuv([60, 20, 28]));
    ellipse(
      f,
      mouthCx,
      mouthCy - mry * 0.7,
      mrx * 0.7,
      mry * 0.28,
      toYuv([235, 232, 225]),
    );
  } else {
    ellipse(
      f,
      mouthCx,
      mouthCy,
      mrx * 0.9,
      Math.max(0.8, headRy * 0.012),
      toYuv([90, 35, 40]),
    );
  }
}
