/**
 * The transparent background's stacked-alpha frame (DECISIONS 6): one I420 picture
 * twice the avatar's height, the avatar's colour on top — premultiplied, so background
 * pixels are black and edges fade to black — and its alpha below as luma, full range
 * (0 transparent … 255 opaque) with neutral chroma. The encoders take the stacked
 * picture as it is: raw yuv420p in and yuv420p out, no scaling or range conversion, so
 * the alpha values reach the decoder as coded (tests/lib/render/stacked_test.ts).
 */
import type { Frame } from "./raster.ts";

/** Composes the stacked picture of colour `f` and alpha plane `alpha` (f's size). */
export function stackAlpha(f: Frame, alpha: Uint8Array): Uint8Array {
  const { width: w, height: h, data } = f;
  const out = new Uint8Array(w * h * 3);
  const ySize = w * h;
  const cw = w >> 1;
  const ch = h >> 1;
  // Luma: colour premultiplied over black (limited-range black is 16).
  for (let i = 0; i < ySize; i++) {
    out[i] = 16 + ((data[i] - 16) * alpha[i] + 127) / 255;
  }
  out.set(alpha, ySize);
  // Chroma: the colour's, premultiplied by the alpha at each 2×2 block's centre; the
  // alpha half neutral.
  const uIn = ySize;
  const vIn = ySize + cw * ch;
  const uOut = 2 * ySize;
  const vOut = uOut + cw * h;
  for (let r = 0; r < ch; r++) {
    for (let c = 0; c < cw; c++) {
      const y0 = 2 * r * w + 2 * c;
      const a =
        (alpha[y0] + alpha[y0 + 1] + alpha[y0 + w] + alpha[y0 + w + 1]) /
        1020;
      const i = r * cw + c;
      out[uOut + i] = 128 + (data[uIn + i] - 128) * a;
      out[vOut + i] = 128 + (data[vIn + i] - 128) * a;
    }
  }
  out.fill(128, uOut + cw * ch, uOut + cw * h);
  out.fill(128, vOut + cw * ch, vOut + cw * h);
  return out;
}
