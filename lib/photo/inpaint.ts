/**
 * Fills the masked pixels of one image plane from what surrounds them: the smoothest
 * surface that meets the unmasked pixels around (a harmonic fill, Laplace's equation
 * by Gauss–Seidel sweeps), started from each column's straight line between the
 * nearest unmasked pixels above and below. Filling column by column alone leaves
 * streaks where neighbouring columns' runs end apart; this does not.
 */

/** A rectangle of a plane. */
export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Sweeps of the fill: enough for a hole a dozen pixels across. */
const SWEEPS = 60;

/**
 * Fills the pixels of `plane` (`width` wide, `height` tall, starting at `offset`) that
 * `mask` (`box.w`×`box.h`, row-major, 1 = fill) marks inside `box` (clipped to the
 * plane).
 */
export function inpaint(
  plane: Uint8Array,
  offset: number,
  width: number,
  height: number,
  box: Box,
  mask: Uint8Array,
): void {
  const x0 = Math.max(0, box.x), y0 = Math.max(0, box.y);
  const x1 = Math.min(width, box.x + box.w),
    y1 = Math.min(height, box.y + box.h);
  const masked = (x: number, y: number) =>
    x >= x0 && x < x1 && y >= y0 && y < y1 &&
    mask[(y - box.y) * box.w + (x - box.x)] === 1;
  const at = (x: number, y: number) => offset + y * width + x;
  const v = new Float32Array(box.w * box.h);
  const holes: number[] = [];
  for (let x = x0; x < x1; x++) {
    for (let y = y0; y < y1; y++) {
      if (!masked(x, y)) continue;
      let a = y - 1, b = y + 1;
      while (a >= 0 && masked(x, a)) a--;
      while (b < height && masked(x, b)) b++;
      const va = a >= 0 ? plane[at(x, a)] : undefined;
      const vb = b < height ? plane[at(x, b)] : undefined;
      const f = (y - a) / (b - a);
      v[(y - box.y) * box.w + (x - box.x)] = va === undefined
        ? vb ?? 128
        : vb === undefined
        ? va
        : va + (vb - va) * f;
      holes.push(x, y);
    }
  }
  if (holes.length === 0) return;
  const value = (x: number, y: number) =>
    masked(x, y) ? v[(y - box.y) * box.w + (x - box.x)] : plane[at(x, y)];
  for (let s = 0; s < SWEEPS; s++) {
    for (let k = 0; k < holes.length; k += 2) {
      const x = holes[k], y = holes[k + 1];
      let sum = 0, n = 0;
      if (x > 0) (sum += value(x - 1, y), n++);
      if (x < width - 1) (sum += value(x + 1, y), n++);
      if (y > 0) (sum += value(x, y - 1), n++);
      if (y < height - 1) (sum += value(x, y + 1), n++);
      v[(y - box.y) * box.w + (x - box.x)] = sum / n;
    }
  }
  for (let k = 0; k < holes.length; k += 2) {
    const x = holes[k], y = holes[k + 1];
    plane[at(x, y)] = Math.round(v[(y - box.y) * box.w + (x - box.x)]);
  }
}

/**
 * Fills the pixels `mask` (`box.w`×`box.h`, 1 = fill) marks in an I420 picture of
 * `w`×`h` (`box` even-aligned): luma as marked, chroma where any pixel of a 2×2 block is.
 */
export function inpaintI420(
  img: Uint8Array,
  w: number,
  h: number,
  box: Box,
  mask: Uint8Array,
): void {
  const half = { x: box.x >> 1, y: box.y >> 1, w: box.w >> 1, h: box.h >> 1 };
  const mask2 = new Uint8Array(half.w * half.h);
  for (let r = 0; r < box.h; r++) {
    for (let c = 0; c < box.w; c++) {
      if (mask[r * box.w + c]) mask2[(r >> 1) * half.w + (c >> 1)] = 1;
    }
  }
  const n = w * h;
  inpaint(img, 0, w, h, box, mask);
  inpaint(img, n, w >> 1, h >> 1, half, mask2);
  inpaint(img, n * 5 / 4, w >> 1, h >> 1, half, mask2);
}
