/**
 * Thin dark spikes over the closed upper lip: where a smile's teeth reached up to a
 * thin upper lip, the tops of the dark gaps between them ride along with the lip's edge,
 * and the closing warp stretches them up into the lip and the skin above it as narrow
 * dark streaks. Found as pixels much darker than their row's neighbours, where those
 * are even (skin or lip, not a moustache's hair), in runs no wider than a tooth gap, in
 * a band from a little above the lip down to the seam, and filled from around them
 * (./inpaint.ts).
 */
import { polylineY } from "../render/photo/geometry.ts";
import { LIP_INNER_UPPER, LIP_OUTER_UPPER } from "../render/photo/landmarks.ts";
import { type Box, inpaintI420 } from "./inpaint.ts";
import { contour } from "./lips.ts";

/**
 * Widest run of dark pixels that is a spike, not a fold or the lips' own shade (a
 * smile's dark corner, carried up as a wedge, reaches 8 px at the seam).
 */
const SPIKE_WIDTH = 9;
/** How much darker than its row's neighbours (8-bit luma) a spike's pixel is. */
const SPIKE_DEPTH = 14;
/** Neighbours each side a pixel is compared with: more than a spike is wide. */
const REACH = 10;
/**
 * Spread of the brighter half of those neighbours' luma on a smooth surface (skin or
 * lip), not hair. The brighter half: a spike's own pixels, fewer than half of the
 * neighbours, are darker than it.
 */
const SMOOTH = 14;

/**
 * Whether the run [`c`, `e`) of a row (from `at`) is a valley: lighter on both sides
 * (three pixels each) than within by `SPIKE_DEPTH`; the edge of a broader shade is
 * dark on one side only.
 */
function valley(out: Uint8Array, at: number, c: number, e: number): boolean {
  let run = 0, left = 0, right = 0;
  for (let k = c; k < e; k++) run += out[at + k];
  for (let k = 1; k <= 3; k++) {
    left += out[at + c - k], right += out[at + e - 1 + k];
  }
  run /= e - c;
  return Math.min(left, right) / 3 - run >= SPIKE_DEPTH;
}

/**
 * Clears the spikes above the seam of the closed lips `lm` (in place, I420 of
 * `w`×`h`); `tU`: the upper lip's thickness (px) at its middle.
 */
export function clearSpikes(
  out: Uint8Array,
  w: number,
  h: number,
  lm: Float32Array,
  tU: number,
): void {
  const iu = contour(lm, LIP_INNER_UPPER), ou = contour(lm, LIP_OUTER_UPPER);
  const x0 = Math.max(REACH, Math.ceil(ou.x[0]));
  const x1 = Math.min(w - REACH - 1, Math.floor(ou.x[ou.x.length - 1]));
  if (x1 - x0 < 2 * REACH) return;
  const above = Math.max(7, 2 * tU);
  let y0 = h, y1 = 0;
  for (let X = x0; X <= x1; X++) {
    y0 = Math.min(y0, Math.floor(polylineY(ou.x, ou.y, X) - above));
    y1 = Math.max(y1, Math.ceil(polylineY(iu.x, iu.y, X)));
  }
  y0 = Math.max(1, y0 & ~1), y1 = Math.min(h - 2, y1);
  const box: Box = {
    x: x0 & ~1,
    y: y0,
    w: ((x1 + 2) & ~1) - (x0 & ~1),
    h: ((y1 + 2) & ~1) - y0,
  };
  const mask = new Uint8Array(box.w * box.h);
  const dark = new Uint8Array(x1 - x0 + 1);
  const near: number[] = [];
  let found = 0;
  for (let Y = y0; Y < y1; Y++) {
    const row = Y * w;
    for (let X = x0; X <= x1; X++) {
      const top = polylineY(ou.x, ou.y, X) - above;
      const seam = polylineY(iu.x, iu.y, X);
      dark[X - x0] = 0;
      if (Y < top || Y + 0.5 > seam - 0.5) continue;
      near.length = 0;
      for (let d = -REACH; d <= REACH; d++) if (d) near.push(out[row + X + d]);
      near.sort((a, b) => a - b);
      // Among even neighbours only (skin, a lip): in hair every pixel is a streak.
      // The brighter half (its two brightest left out) is the surface around.
      const n = near.length, half = n >> 1;
      const even = near[n - 3] - near[half] <= SMOOTH;
      if (even && out[row + X] < near[(3 * n) >> 2] - SPIKE_DEPTH) {
        dark[X - x0] = 1;
      }
    }
    // Only narrow runs: a spike, not a fold crossing the row or the lips' corner shade.
    for (let c = 0; c < dark.length;) {
      if (!dark[c]) {
        c++;
        continue;
      }
      let e = c;
      while (e < dark.length && dark[e]) e++;
      if (e - c <= SPIKE_WIDTH && valley(out, row + x0, c, e)) {
        for (
          let k = Math.max(0, c - 1);
          k < Math.min(dark.length, e + 1);
          k++
        ) {
          mask[(Y - box.y) * box.w + (x0 + k - box.x)] = 1;
        }
        found++;
      }
      c = e;
    }
  }
  if (found === 0) return;
  inpaintI420(out, w, h, box, mask);
}
