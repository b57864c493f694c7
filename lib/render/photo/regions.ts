/**
 * Regions of a photo avatar read off its pixels once, for the rig (./rig.ts): mean
 * tones (skin, lips, the white of the eyes) and each eye's iris and opening.
 */
import { polylineY } from "./geometry.ts";
import { IRIS_START } from "./landmarks.ts";
import type { PhotoAvatar } from "./types.ts";

/** A colour in BT.601 limited range. */
export interface Tone {
  y: number;
  u: number;
  v: number;
}

export interface EyeRig {
  /** Lid contours, corner to corner, x increasing (vertex indices). */
  upper: number[];
  lower: number[];
  /** Iris centre and radius, in crop pixels. */
  irisX: number;
  irisY: number;
  irisR: number;
  /** The white of the eye, sampled beside the iris. */
  sclera: Tone;
  /** Widest rest gap between the lids. */
  gap: number;
  /**
   * How far (px) above the upper lid line the lid's own skin begins, past the lashes
   * (thick or made-up lashes reach well above the line): one value per pixel column
   * from `riseX0`. A closing lid is drawn from that skin, not from the lashes.
   */
  riseX0: number;
  rise: Float64Array;
  /**
   * How far (px) above the lid line a blink carries the photo down whole with it, one
   * height for the eye (per-column heights made a closed lid's knots zigzag into
   * spikes): the lashes, the median rise of the columns where skin was found above
   * them, at most 0.4 of the gap; none where it mostly was not (a lid in deep shade or
   * made up says nothing of its lashes). See `lashAt`.
   */
  lash: number;
}

/** Mean tone of the photo's pixels for which `keep(x, y)` holds inside a box. */
export function sampleTone(
  a: PhotoAvatar,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  keep: (x: number, y: number) => boolean = () => true,
): Tone {
  const w = a.width, h = a.height, cw = w >> 1;
  let sy = 0, su = 0, sv = 0, n = 0;
  for (let y = Math.max(0, Math.floor(y0)); y < Math.min(h, y1); y++) {
    for (let x = Math.max(0, Math.floor(x0)); x < Math.min(w, x1); x++) {
      if (!keep(x + 0.5, y + 0.5)) continue;
      const c = (y >> 1) * cw + (x >> 1);
      sy += a.i420[y * w + x];
      su += a.i420[w * h + c];
      sv += a.i420[w * h * 5 / 4 + c];
      n++;
    }
  }
  return n ? { y: sy / n, u: su / n, v: sv / n } : { y: 128, u: 128, v: 128 };
}

/** An eye's lids (vertex indices), iris and white, from the rest landmarks. */
export function eyeRig(
  a: PhotoAvatar,
  upper: number[],
  lower: number[],
  sx: Float64Array,
  sy: Float64Array,
): EyeRig {
  const ex = (sx[upper[0]] + sx[upper[upper.length - 1]]) / 2;
  const ey = (sy[upper[0]] + sy[upper[upper.length - 1]]) / 2;
  // The iris of this eye: whichever of the two is nearer its centre.
  const lm = a.landmarks;
  let best = IRIS_START;
  for (const c of [IRIS_START, IRIS_START + 5]) {
    const d = Math.hypot(lm[c * 3] - ex, lm[c * 3 + 1] - ey);
    if (d < Math.hypot(lm[best * 3] - ex, lm[best * 3 + 1] - ey)) best = c;
  }
  const irisX = lm[best * 3], irisY = lm[best * 3 + 1];
  let r = 0;
  for (let k = 1; k < 5; k++) {
    r +=
      Math.hypot(lm[(best + k) * 3] - irisX, lm[(best + k) * 3 + 1] - irisY) /
      4;
  }
  let gap = 0;
  const ux = upper.map((i) => sx[i]), uy = upper.map((i) => sy[i]);
  const lx = lower.map((i) => sx[i]), ly = lower.map((i) => sy[i]);
  for (let x = ux[0]; x <= ux[ux.length - 1]; x++) {
    gap = Math.max(gap, polylineY(lx, ly, x) - polylineY(ux, uy, x));
  }
  const sclera = sampleTone(
    a,
    ux[0],
    irisY - r,
    ux[ux.length - 1],
    irisY + r,
    (x, y) =>
      Math.hypot(x - irisX, y - irisY) > r * 1.15 &&
      y > polylineY(ux, uy, x) + 1 && y < polylineY(lx, ly, x) - 1,
  );
  return {
    upper,
    lower,
    irisX,
    irisY,
    irisR: irisEdge(a, irisX, irisY, Math.max(1, r), sclera.y),
    sclera,
    gap,
    riseX0: Math.ceil(ux[0]),
    ...lidSkin(a, ux, uy, gap),
  };
}

/** The eye's one lash height (`EyeRig.lash`) from its columns' `rise`. */
function lashHeight(rise: Float64Array, gap: number): number {
  // The middle of the eye (its corners' columns are mostly the other lid), where
  // skin was found above the lashes.
  const a = Math.floor(rise.length * 0.15), b = Math.ceil(rise.length * 0.85);
  const found = Array.from(rise.subarray(a, Math.max(a + 1, b)))
    .filter((r) => r < 0.6 * gap - 0.5)
    .sort((x, y) => x - y);
  if (found.length * 2 < b - a) return 0;
  return Math.min(LASH_MOST * gap, found[Math.floor((found.length - 1) / 2)]);
}

/**
 * The rig's points around an eye (`upper`/`lower` lid indices into `sx`/`sy`), as
 * [x, y, side] (side < 0 above the eye, > 0 below), in five columns: bands 0.7 and
 * 1.5 gaps above the upper lid and 0.9 below the lower one, so the lids' motion stays
 * near the eye; and where the lashes end above the lid line (a blink carries them
 * down whole with it, pose.ts).
 */
export function lidKnots(
  e: EyeRig,
  upper: number[],
  lower: number[],
  sx: Float64Array,
  sy: Float64Array,
): Array<[number, number, number]> {
  const ux = upper.map((i) => sx[i]), uy = upper.map((i) => sy[i]);
  const lx = lower.map((i) => sx[i]), ly = lower.map((i) => sy[i]);
  const x0 = ux[0], x1 = ux[ux.length - 1], gap = Math.max(1, e.gap);
  const out: Array<[number, number, number]> = [];
  for (let k = 1; k < 6; k++) {
    const x = x0 + (x1 - x0) * k / 6;
    const yu = polylineY(ux, uy, x), yl = polylineY(lx, ly, x);
    out.push([x, yu - 0.7 * gap, -1], [x, yu - 1.5 * gap, -2]);
    out.push([x, yl + 0.9 * gap, 1]);
    const lash = lashAt(e, x);
    if (lash >= 1.5) out.push([x, yu - lash, -1]);
  }
  return out;
}

/** The lashes a blink carries down whole with the lid line: at most this of the gap. */
const LASH_MOST = 0.4;

/** Lid skin is at least this share of the lid's brightest (p75) luma; lashes are not. */
const LID_SKIN = 0.8;

/**
 * Per column of the eye (`riseX0` on, 1 px apart): the distance above the upper lid
 * line `ux`/`uy` (1 px at least) where the column first turns as light as the lid's
 * skin, at most 0.6 of the eye's gap, smoothed over five columns; and the eye's
 * one lash height from them. The skin's luma: the column's p75 between 0.4 and 1.3
 * gaps above the line (the lid under the brow).
 */
function lidSkin(
  a: PhotoAvatar,
  ux: number[],
  uy: number[],
  gap: number,
): { rise: Float64Array; lash: number } {
  const W = a.width, H = a.height, Y = a.i420;
  const x0 = Math.ceil(ux[0]), x1 = Math.floor(ux[ux.length - 1]);
  const n = Math.max(1, x1 - x0 + 1);
  const raw = new Float64Array(n);
  const luma = (x: number, y: number) =>
    Y[Math.min(H - 1, Math.max(0, Math.round(y))) * W + x];
  const most = 0.6 * gap;
  for (let x = Math.max(0, x0); x <= Math.min(W - 1, x1); x++) {
    const yl = polylineY(ux, uy, x);
    const above: number[] = [];
    for (let d = 0.4 * gap; d <= 1.3 * gap; d += 0.5) {
      above.push(luma(x, yl - d));
    }
    above.sort((p, q) => p - q);
    const skin = above[Math.floor(0.75 * (above.length - 1))] ?? 0;
    // From a pixel above the line: on it may lie the white of the eye.
    let rise = most;
    for (let d = 1; d <= most; d += 0.5) {
      if (luma(x, yl - d) >= LID_SKIN * skin) {
        rise = d;
        break;
      }
    }
    raw[x - x0] = rise;
  }
  const rise = smooth5(raw);
  return { rise, lash: lashHeight(rise, gap) };
}

/** `raw` averaged over five columns: one dark hair does not pull the lid's source up. */
function smooth5(raw: Float64Array): Float64Array {
  const out = new Float64Array(raw.length);
  for (let i = 0; i < raw.length; i++) {
    let s = 0, n = 0;
    for (
      let j = Math.max(0, i - 2);
      j <= Math.min(raw.length - 1, i + 2);
      j++
    ) {
      s += raw[j], n++;
    }
    out[i] = s / n;
  }
  return out;
}

/**
 * How far above the lid line at photo column `x` a blink carries the photo whole: the
 * eye's lash height, but not past this column's own lashes (a glint or a lit lid
 * just above them would be carried down over the closed eye).
 */
export function lashAt(e: EyeRig, x: number): number {
  return Math.min(e.lash, riseAt(e, x) + 1);
}

/** The lashes' rise (px) of `e` at photo column `x`. */
export function riseAt(e: EyeRig, x: number): number {
  const i = Math.min(e.rise.length - 1, Math.max(0, Math.round(x - e.riseX0)));
  return e.rise[i];
}

/**
 * The iris's radius as the photo shows it: from the mesh's radius `r` outwards along
 * the row through its centre, where the luma first passes halfway from the iris's
 * to the white's (the mesh's iris is often smaller than the dark disc; a moved iris
 * would leave a ghost of the rest behind).
 */
function irisEdge(
  a: PhotoAvatar,
  cx: number,
  cy: number,
  r: number,
  white: number,
): number {
  const w = a.width;
  const at = (x: number, y: number) =>
    a.i420[Math.round(y) * w + Math.min(w - 1, Math.max(0, Math.round(x)))];
  const dark = (at(cx, cy) + at(cx - 0.3 * r, cy) + at(cx + 0.3 * r, cy)) / 3;
  const half = (dark + white) / 2;
  for (let k = 0.8; k <= 1.8; k += 0.05) {
    if ((at(cx - k * r, cy) + at(cx + k * r, cy)) / 2 > half) {
      return Math.max(r, k * r);
    }
  }
  return 1.8 * r;
}
