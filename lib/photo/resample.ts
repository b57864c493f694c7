/**
 * Resampling for the portrait's crop and the models' input: separable, area averaging
 * when shrinking (every source pixel counts by the part of it an output pixel covers, so
 * nothing aliases), bilinear when enlarging.
 */

/** A rectangle in source pixels; it may reach past the image (the edge repeats). */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

interface Taps {
  /** Taps per output pixel. */
  n: number;
  /** Source index of each tap, clamped to the image. */
  index: Int32Array;
  weight: Float32Array;
}

function axisTaps(
  start: number,
  length: number,
  size: number,
  out: number,
): Taps {
  const scale = length / out;
  const n = scale >= 1 ? Math.ceil(scale) + 1 : 2;
  const index = new Int32Array(out * n);
  const weight = new Float32Array(out * n);
  const clamp = (p: number) => Math.min(size - 1, Math.max(0, p));
  for (let i = 0; i < out; i++) {
    const base = i * n;
    if (scale >= 1) {
      const a = start + i * scale;
      const b = a + scale;
      let k = 0;
      for (let p = Math.floor(a); p < b && k < n; p++, k++) {
        const cover = Math.min(b, p + 1) - Math.max(a, p);
        index[base + k] = clamp(p);
        weight[base + k] = cover / scale;
      }
    } else {
      const c = start + (i + 0.5) * scale - 0.5;
      const p = Math.floor(c);
      const t = c - p;
      index[base] = clamp(p);
      weight[base] = 1 - t;
      index[base + 1] = clamp(p + 1);
      weight[base + 1] = t;
    }
  }
  return { n, index, weight };
}

/**
 * `rect` of a `channels`-channel 8-bit image (`width`×`height`) resampled to
 * `outWidth`×`outHeight`.
 */
export function resample(
  src: Uint8Array,
  width: number,
  height: number,
  channels: number,
  rect: Rect,
  outWidth: number,
  outHeight: number,
): Uint8Array {
  const xs = axisTaps(rect.x, rect.w, width, outWidth);
  const ys = axisTaps(rect.y, rect.h, height, outHeight);
  // Horizontal pass over the source rows the vertical taps read.
  let rowMin = height;
  let rowMax = -1;
  for (let i = 0; i < ys.index.length; i++) {
    if (ys.weight[i] === 0) continue;
    rowMin = Math.min(rowMin, ys.index[i]);
    rowMax = Math.max(rowMax, ys.index[i]);
  }
  const rows = Math.max(0, rowMax - rowMin + 1);
  const tmp = new Float32Array(rows * outWidth * channels);
  for (let r = 0; r < rows; r++) {
    const srcRow = (rowMin + r) * width * channels;
    const dstRow = r * outWidth * channels;
    for (let x = 0; x < outWidth; x++) {
      for (let k = 0; k < xs.n; k++) {
        const w = xs.weight[x * xs.n + k];
        if (w === 0) continue;
        const s = srcRow + xs.index[x * xs.n + k] * channels;
        const d = dstRow + x * channels;
        for (let c = 0; c < channels; c++) tmp[d + c] += src[s + c] * w;
      }
    }
  }
  const out = new Uint8Array(outWidth * outHeight * channels);
  const acc = new Float32Array(outWidth * channels);
  for (let y = 0; y < outHeight; y++) {
    acc.fill(0);
    for (let k = 0; k < ys.n; k++) {
      const w = ys.weight[y * ys.n + k];
      if (w === 0) continue;
      const row = (ys.index[y * ys.n + k] - rowMin) * outWidth * channels;
      for (let i = 0; i < acc.length; i++) acc[i] += tmp[row + i] * w;
    }
    const o = y * outWidth * channels;
    for (let i = 0; i < acc.length; i++) {
      out[o + i] = Math.min(255, Math.max(0, Math.round(acc[i])));
    }
  }
  return out;
}
