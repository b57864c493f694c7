/**
 * Filling the holes the warp leaves (the open mouth, the eyes between the lids): a
 * region between two frame contours that share their corners, shaded per pixel, its
 * edges blended by coverage.
 */
import type { FaceState } from "../face.ts";
import { polylineY } from "./geometry.ts";
import type { Pose } from "./pose.ts";
import type { Rig } from "./rig.ts";
import type { WarpSource } from "./warp.ts";

/** A contour's frame points, x increasing. */
export interface Line {
  x: Float64Array;
  y: Float64Array;
}

export function line(
  idx: readonly number[],
  xs: Float64Array,
  ys: Float64Array,
): Line {
  return {
    x: Float64Array.from(idx, (i) => xs[i]),
    y: Float64Array.from(idx, (i) => ys[i]),
  };
}

/**
 * `l` through a Catmull-Rom spline, `k` points per segment (x kept non-decreasing):
 * the mouth's opening is a curve, where the 11 landmarks of each lip drew a polygon
 * with visible facets. A convex opening's spline runs just outside its polygon, over
 * the lips' inner edge, so no unwarped pixel is left between them.
 */
export function smoothLine(l: Line, k = 4): Line {
  const n = l.x.length, m = (n - 1) * k + 1;
  const x = new Float64Array(m), y = new Float64Array(m);
  const at = (a: Float64Array, i: number) => a[Math.max(0, Math.min(n - 1, i))];
  for (let i = 0; i < n - 1; i++) {
    for (let j = 0; j < k; j++) {
      const t = j / k, t2 = t * t, t3 = t2 * t;
      const w0 = -0.5 * t3 + t2 - 0.5 * t, w1 = 1.5 * t3 - 2.5 * t2 + 1;
      const w2 = -1.5 * t3 + 2 * t2 + 0.5 * t, w3 = 0.5 * t3 - 0.5 * t2;
      const o = i * k + j;
      x[o] = w0 * at(l.x, i - 1) + w1 * l.x[i] + w2 * l.x[i + 1] +
        w3 * at(l.x, i + 2);
      y[o] = w0 * at(l.y, i - 1) + w1 * l.y[i] + w2 * l.y[i + 1] +
        w3 * at(l.y, i + 2);
      if (o > 0 && x[o] < x[o - 1]) x[o] = x[o - 1];
    }
  }
  x[m - 1] = Math.max(x[m - 2], l.x[n - 1]), y[m - 1] = l.y[n - 1];
  return { x, y };
}

/** A colour being shaded (reused, no allocation per pixel). */
export interface Px {
  y: number;
  u: number;
  v: number;
}

/**
 * Fills the region between the frame polylines `up` and `lo` (sharing their corners):
 * `shade(x, y, px)` colours the point (x, y); edges are blended by vertical coverage,
 * each column by `reveal(x, gap)` (0 keeps what is there) and each point by
 * `alpha(x, y)`.
 * Luma at every pixel, chroma at each 2×2 block's centre.
 */
export function fillLens(
  out: Uint8Array,
  w: number,
  h: number,
  up: Line,
  lo: Line,
  shade: (x: number, y: number, px: Px) => void,
  reveal: (x: number, gap: number) => number = () => 1,
  alpha?: (x: number, y: number) => number,
): void {
  const px: Px = { y: 0, u: 0, v: 0 };
  const x0 = Math.max(0, Math.floor(Math.min(up.x[0], lo.x[0])));
  const x1 = Math.min(
    w,
    Math.ceil(Math.max(up.x[up.x.length - 1], lo.x[lo.x.length - 1])),
  );
  const cw = w >> 1, uOff = w * h, vOff = uOff + cw * (h >> 1);
  for (let scale = 1; scale <= 2; scale++) {
    for (let X = x0 - (x0 % scale); X < x1; X += scale) {
      const xc = X + scale / 2;
      const yu = polylineY(up.x, up.y, xc), yl = polylineY(lo.x, lo.y, xc);
      if (yl - yu < 0.05) continue;
      const k = reveal(xc, yl - yu);
      if (k <= 0) continue;
      const r0 = Math.max(0, Math.floor(yu / scale - 0.5)),
        r1 = Math.min(h / scale, Math.ceil(yl / scale + 0.5));
      for (let r = r0; r < r1; r++) {
        const yc = (r + 0.5) * scale;
        // Pixels centred inside are the mesh's hole (no triangle wrote them): filled
        // whole; those centred just outside belong to the lips: blended by how much
        // of them the opening covers.
        const top = yc >= yu ? 1 : Math.max(0, 0.5 - (yu - yc) / scale);
        const bottom = yc < yl ? 1 : Math.max(0, 0.5 - (yc - yl) / scale);
        const cov = top * bottom * Math.min(1, (yl - yu) / scale) * k *
          (alpha ? alpha(xc, yc) : 1);
        if (cov <= 0) continue;
        shade(xc, yc, px);
        if (scale === 1) {
          const i = r * w + X;
          out[i] += (px.y - out[i]) * cov;
        } else {
          const i = r * cw + X / 2;
          out[uOff + i] += (px.u - out[uOff + i]) * cov;
          out[vOff + i] += (px.v - out[vOff + i]) * cov;
        }
      }
    }
  }
}

/** Scratch per painter, so frames allocate nothing. */
export interface InteriorScratch {
  p: Float64Array;
}

/** What an interior drawer takes after the rig: the frame's pose and state, the photo, the frame's planes, scratch. */
export type DrawArgs = [
  pose: Pose,
  state: FaceState,
  src: WarpSource,
  out: Uint8Array,
  scratch: InteriorScratch,
];

/** Draws one of the holes' insides into `out`. */
export type DrawInterior = (rig: Rig, ...args: DrawArgs) => void;
