/**
 * A bench-only mark (`RENDER_CLOCK_STAMP=true`): the wall clock (epoch ms, mod 2^32)
 * drawn into each frame's top rows as a 32-block barcode, so a player can read back,
 * on every presented frame, when the renderer drew it (bench/transports.ts).
 */
import type { Frame } from "./draw.ts";

/** Bits in the barcode, and the rows it takes at the top of the frame. */
export const STAMP_BITS = 32;

/** The barcode's block size for a frame `width` wide (blocks fill one row). */
export function stampBlock(width: number): number {
  return Math.floor(width / STAMP_BITS) & ~1;
}

/** Draws `ms` (mod 2^32) into `frame` (I420): white block = 1, black = 0, MSB first. */
export function stampClock(frame: Frame, ms: number): void {
  const { width, height, data } = frame;
  const block = stampBlock(width);
  let v = Math.floor(ms) % 2 ** 32;
  const bits: number[] = [];
  for (let i = 0; i < STAMP_BITS; i++) {
    bits.unshift(v % 2);
    v = Math.floor(v / 2);
  }
  const uBase = width * height;
  const vBase = uBase + (width / 2) * (height / 2);
  for (let b = 0; b < STAMP_BITS; b++) {
    const luma = bits[b] ? 235 : 16;
    for (let y = 0; y < block; y++) {
      data.fill(luma, y * width + b * block, y * width + (b + 1) * block);
    }
    for (let y = 0; y < block / 2; y++) {
      const row = y * (width / 2) + (b * block) / 2;
      data.fill(128, uBase + row, uBase + row + block / 2);
      data.fill(128, vBase + row, vBase + row + block / 2);
    }
  }
}

/** Reads the barcode back from RGBA pixels of the frame's top rows (what a canvas gives). */
export function readClockStamp(
  rgba: Uint8ClampedArray | Uint8Array,
  width: number,
): number {
  const block = stampBlock(width);
  let v = 0;
  for (let b = 0; b < STAMP_BITS; b++) {
    const i = ((block >> 1) * width + b * block + (block >> 1)) * 4;
    const lum = (rgba[i] + rgba[i + 1] + rgba[i + 2]) / 3;
    v = v * 2 + (lum > 128 ? 1 : 0);
  }
  return v;
}
