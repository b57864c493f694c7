/**
 * Drawing primitives for I420 (yuv420p) frames: colours in BT.601 limited range, a
 * cached background gradient, and shapes filled span by span (luma anti-aliased
 * horizontally, chroma sampled at each 2×2 block's centre).
 */
import type { BackgroundDef } from "../avatars.ts";

export type Rgb = readonly [number, number, number];

/** One I420 frame: Y plane, then U, then V (quarter size each). */
export interface Frame {
  width: number;
  height: number;
  data: Uint8Array;
}

export interface Yuv {
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

/** `a` moved towards `b` by `k` (0..1). */
export function mix(a: Rgb, b: Rgb, k: number): Rgb {
  return [
    a[0] + (b[0] - a[0]) * k,
    a[1] + (b[1] - a[1]) * k,
    a[2] + (b[2] - a[2]) * k,
  ];
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

export interface FillOptions {
  alpha?: number;
  /** Rows outside [clipTop, clipBottom) are not drawn. */
  clipTop?: number;
  clipBottom?: number;
  /** Leans the shape: each row shifts by shear × (pivotY − y). */
  shear?: number;
  pivotY?: number;
}

/**
 * A filled ellipse centred at (cx, cy), drawn straight into the planes. Rows are
 * computed analytically (no per-row closure), which keeps a frame's ~40 shapes cheap.
 */
export function ellipse(
  f: Frame,
  cx: number,
  cy: number,
  rx: number,
  ry: number,
  color: Yuv,
  opts: FillOptions = {},
): void {
  if (rx <= 0 || ry <= 0) return;
  const { width: w, height: h, data } = f;
  const alpha = opts.alpha ?? 1;
  const shear = opts.shear ?? 0;
  const pivotY = opts.pivotY ?? cy;
  const y0 = Math.max(0, Math.floor(cy - ry), Math.ceil(opts.clipTop ?? 0));
  const y1 = Math.min(
    h,
    Math.ceil(cy + ry),
    Math.floor(opts.clipBottom ?? h),
  );
  const invRy = 1 / ry;
  const cyY = color.y;
  for (let y = y0; y < y1; y++) {
    const d = (y + 0.5 - cy) * invRy;
    if (d <= -1 || d >= 1) continue;
    const dx = rx * Math.sqrt(1 - d * d);
    const c = cx + shear * (pivotY - y - 0.5);
    const a = c - dx;
    const b = c + dx;
    const xa = Math.max(0, Math.floor(a));
    const xb = Math.min(w - 1, Math.floor(b));
    const row = y * w;
    if (xb - xa < 2 || alpha < 1) {
      for (let x = xa; x <= xb; x++) {
        const cover = Math.min(1, x + 1 - a, b - x) * alpha;
        if (cover <= 0) continue;
        data[row + x] += (cyY - data[row + x]) * cover;
      }
      continue;
    }
    // Edges anti-aliased, the inside filled at once.
    data[row + xa] += (cyY - data[row + xa]) * Math.min(1, xa + 1 - a);
    data.fill(cyY + 0.5, row + xa + 1, row + xb);
    const cb = b - xb;
    if (cb > 0) data[row + xb] += (cyY - data[row + xb]) * Math.min(1, cb);
  }
  const cw = w >> 1;
  const uOff = w * h;
  const vOff = uOff + cw * (h >> 1);
  const cu = color.u;
  const cv = color.v;
  for (let r = y0 >> 1; r < (y1 + 1) >> 1; r++) {
    const yc = 2 * r + 1;
    const d = (yc - cy) * invRy;
    if (d <= -1 || d >= 1) continue;
    const dx = rx * Math.sqrt(1 - d * d);
    const c = cx + shear * (pivotY - yc);
    const xa = Math.max(0, Math.ceil((c - dx) / 2 - 0.5));
    const xb = Math.min(cw - 1, Math.floor((c + dx) / 2 - 0.5));
    if (xb < xa) continue;
    const i = r * cw;
    if (alpha >= 1) {
      data.fill(cu + 0.5, uOff + i + xa, uOff + i + xb + 1);
      data.fill(cv + 0.5, vOff + i + xa, vOff + i + xb + 1);
      continue;
    }
    for (let x = xa; x <= xb; x++) {
      data[uOff + i + x] += (cu - data[uOff + i + x]) * alpha;
      data[vOff + i + x] += (cv - data[vOff + i + x]) * alpha;
    }
  }
}
