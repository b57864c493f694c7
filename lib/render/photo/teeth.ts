/**
 * The photo's own upper teeth, read once per rig from the avatar's teeth layer (what
 * the rest face's closed lips cover, lib/photo/mouth.ts): their tone, and per column
 * where they hang from (the photo's upper inner lip) and where their biting edge is,
 * so an opening mouth shows them fixed to the skull, and never the photo's lower teeth
 * or its dark mouth below them.
 */
import { polylineY } from "./geometry.ts";
import type { Tone } from "./regions.ts";
import type { TeethLayer } from "./types.ts";

export interface PhotoTeeth extends Tone {
  layer: TeethLayer;
  /** The layer's chroma planes (views into its I420). */
  u420: Uint8Array;
  v420: Uint8Array;
  /** First column (crop px) of `top` and `edge`. */
  x0: number;
  /** Per column: the photo's upper inner lip, and the upper teeth's biting edge (y). */
  top: Float32Array;
  edge: Float32Array;
  /** The row's usual height (px): the median over the columns that show teeth. */
  height: number;
  /**
   * Per column: how much of the photo's row is there (1 well inside it, 0 well past
   * its ends, in between over `BLEND` columns each side of an end), and the nearest
   * column that shows the photo's teeth (−1: none). Where the row ends, the drawn
   * teeth take over from the photo's gradually, in the photo's nearest texture.
   */
  presence: Float32Array;
  nearest: Int32Array;
}

/** Columns each side of the photo's row's end over which drawn teeth take over. */
export const BLEND = 4;

/** The smoothed presence of the row, and each column's nearest column of it. */
function rowPresence(
  top: Float32Array,
  edge: Float32Array,
): { presence: Float32Array; nearest: Int32Array } {
  const n = edge.length;
  // A column shows teeth when they are at least a pixel tall there (an edge a
  // fraction below the lip is where the scan stopped at once).
  const has = Uint8Array.from(edge, (e, c) => e - top[c] >= 1 ? 1 : 0);
  const presence = new Float32Array(n), nearest = new Int32Array(n).fill(-1);
  for (let c = 0; c < n; c++) {
    let k = 0;
    for (let d = -BLEND; d <= BLEND; d++) k += has[c + d] ?? 0;
    presence[c] = k / (2 * BLEND + 1);
    for (let d = 0; d < n && nearest[c] < 0; d++) {
      if (has[c - d]) nearest[c] = c - d;
      else if (has[c + d]) nearest[c] = c + d;
    }
  }
  return { presence, nearest };
}

/** Narrowest notch in the row's biting edge that is the photo's, in columns. */
const NOTCH = 8;

/**
 * A row of teeth has no notch narrower than about a tooth: a shorter drop in the
 * teeth's height (a shaded line across a tooth, a reflection that stopped the column's
 * scan; a median over five columns misses a drop six wide) is raised to the lower of
 * the heights on either side within `NOTCH` columns. Where the row ends (no teeth on
 * one side) nothing is raised.
 */
export function closeNotches(top: Float32Array, edge: Float32Array): void {
  const n = edge.length;
  const hgt = Float32Array.from(edge, (e, c) => e - top[c]);
  for (let c = 0; c < n; c++) {
    let left = 0, right = 0;
    for (let d = 1; d <= NOTCH; d++) {
      if (c - d >= 0) left = Math.max(left, hgt[c - d]);
      if (c + d < n) right = Math.max(right, hgt[c + d]);
    }
    const floor = Math.min(left, right);
    if (floor > hgt[c]) edge[c] = top[c] + floor;
  }
}

/** Steepest change of the row's biting edge from column to column (px). */
export const EDGE_SLOPE = 1.5;

/**
 * The biting edge with no step in it: where one part of the row shows taller teeth
 * than the next (a lit part beside a shaded one), the taller part is cut back to a
 * slope of `EDGE_SLOPE` towards the shorter (a step of 14 to 5 px showed as a hard
 * rectangle of photo teeth with the drawn mouth under it); a row's height as it
 * shortens towards its ends and each tooth's scallop are gentler than that.
 */
export function easeSteps(top: Float32Array, edge: Float32Array): void {
  const n = edge.length;
  const hgt = Float32Array.from(edge, (e, c) => e - top[c]);
  // (Between columns that both show teeth: the row's own ends are where the drawn
  // teeth take over.)
  const shows = (h: number) => h >= 2;
  for (let c = 1; c < n; c++) {
    if (shows(hgt[c - 1]) && shows(hgt[c])) {
      hgt[c] = Math.min(hgt[c], hgt[c - 1] + EDGE_SLOPE);
    }
  }
  for (let c = n - 2; c >= 0; c--) {
    if (shows(hgt[c + 1]) && shows(hgt[c])) {
      hgt[c] = Math.min(hgt[c], hgt[c + 1] + EDGE_SLOPE);
    }
  }
  for (let c = 0; c < n; c++) edge[c] = top[c] + hgt[c];
}

/** Longest visible upper tooth, as a share of the face's height (~11 mm). */
const MAX_TOOTH = 0.06;

/** Chroma a lip needs (distance from grey, 8-bit U/V) to tell a tooth from it by colour. */
const MIN_LIP_CHROMA = 8;

/**
 * Whether a pixel of chroma (`u`, `v`) has at least half the lip's own colour (its
 * chroma projected on the lip's): a lip, not a tooth, however light. A lip with little
 * colour of its own tells nothing: false.
 */
function lipColoured(u: number, v: number, lip: Tone | undefined): boolean {
  if (!lip) return false;
  const lu = lip.u - 128, lv = lip.v - 128, m = lu * lu + lv * lv;
  if (m < MIN_LIP_CHROMA ** 2) return false;
  return ((u - 128) * lu + (v - 128) * lv) / m >= 0.8;
}

/**
 * The upper teeth of `layer`, or null when it shows none (a dark open mouth, or lips
 * apart over no teeth): per column, from the upper inner lip down while the pixels
 * stay bright (within 30 % of the brightest there) and not of the `lip`'s colour (a
 * light lip is as bright as a tooth beside dark skin), at most `MAX_TOOTH` of `faceH`,
 * never past the lower lip.
 */
export function photoTeeth(
  layer: TeethLayer | null | undefined,
  faceH: number,
  skinY: number,
  lip?: Tone,
): PhotoTeeth | null {
  if (!layer) return null;
  const { x, y, w, h, i420 } = layer;
  const ux: number[] = [],
    uy: number[] = [],
    lx: number[] = [],
    ly: number[] = [];
  for (let k = 0; k < layer.upper.length; k += 2) {
    ux.push(layer.upper[k]), uy.push(layer.upper[k + 1]);
    lx.push(layer.lower[k]), ly.push(layer.lower[k + 1]);
  }
  const x0 = Math.ceil(ux[0]), x1 = Math.floor(ux[ux.length - 1]);
  const cols = Math.max(0, x1 - x0 + 1);
  const top = new Float32Array(cols), edge = new Float32Array(cols);
  const lum = (X: number, Y: number) => {
    const c = Math.min(w - 1, Math.max(0, X - x));
    const r = Math.min(h - 1, Math.max(0, Math.round(Y) - y));
    return i420[r * w + c];
  };
  let sy = 0, su = 0, sv = 0, n = 0, cols0 = 0;
  const bright = 16 + (skinY - 16) * 0.75;
  for (let c = 0; c < cols; c++) {
    const X = x0 + c;
    const yu = polylineY(ux, uy, X), yl = polylineY(lx, ly, X);
    top[c] = yu;
    const end = Math.min(yl, yu + MAX_TOOTH * faceH);
    let peak = 0, Y = Math.ceil(yu);
    for (; Y < end; Y++) {
      const l = lum(X, Y);
      const r = Math.min(h - 1, Math.max(0, Y - y)) >> 1;
      const cc = r * (w >> 1) + (Math.min(w - 1, Math.max(0, X - x)) >> 1);
      const u = i420[w * h + cc], v = i420[w * h * 5 / 4 + cc];
      const lipHere = lipColoured(u, v, lip);
      // The lip's own edge above the row is passed over; under the row, it ends it.
      if (lipHere) {
        if (peak > bright) break;
        continue;
      }
      peak = Math.max(peak, l);
      if (peak > bright && l < 0.7 * peak) break;
      if (l > bright) sy += l, su += u, sv += v, n++;
    }
    edge[c] = peak > bright ? Y : yu;
    if (peak > bright) cols0++;
  }
  if (n === 0 || cols0 < 0.3 * cols) return null;
  // The biting edge runs smoothly along the row: a median over five columns, so
  // one dark gap between two teeth does not cut a notch up to the lip.
  const raw = edge.slice();
  for (let c = 0; c < cols; c++) {
    const v = [];
    for (let d = -2; d <= 2; d++) {
      v.push(raw[Math.min(cols - 1, Math.max(0, c + d))]);
    }
    v.sort((a, b) => a - b);
    edge[c] = Math.max(top[c], v[2]);
  }
  closeNotches(top, edge);
  easeSteps(top, edge);
  const heights: number[] = [];
  for (let c = 0; c < cols; c++) {
    if (edge[c] > top[c]) heights.push(edge[c] - top[c]);
  }
  heights.sort((a, b) => a - b);
  const q = w * h / 4;
  return {
    height: heights[heights.length >> 1] ?? 0,
    y: sy / n,
    u: su / n,
    v: sv / n,
    layer,
    u420: i420.subarray(w * h, w * h + q),
    v420: i420.subarray(w * h + q),
    x0,
    top,
    edge,
    ...rowPresence(top, edge),
  };
}
