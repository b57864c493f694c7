/**
 * The person's colours at the edge of its mask, for compositing over another
 * background: a pixel the mask calls part person holds the photo's old background
 * mixed in (a light or coloured fringe over the new one). Its colour is taken instead
 * from the solid person pixels around it, weighted by how solid they are.
 */

/** Mask values at and above this are the person's own colour, kept as photographed. */
const SOLID = 250;

/** Sums of `v` over the (2r+1)² box around each pixel, into `out` (`tmp` scratch). */
function boxSum(
  v: Float32Array,
  w: number,
  h: number,
  r: number,
  tmp: Float32Array,
  out: Float32Array,
): void {
  for (let y = 0; y < h; y++) {
    const row = y * w;
    let s = 0;
    for (let x = 0; x < Math.min(w, r); x++) s += v[row + x];
    for (let x = 0; x < w; x++) {
      if (x + r < w) s += v[row + x + r];
      if (x - r - 1 >= 0) s -= v[row + x - r - 1];
      tmp[row + x] = s;
    }
  }
  for (let x = 0; x < w; x++) {
    let s = 0;
    for (let y = 0; y < Math.min(h, r); y++) s += tmp[y * w + x];
    for (let y = 0; y < h; y++) {
      if (y + r < h) s += tmp[(y + r) * w + x];
      if (y - r - 1 >= 0) s -= tmp[(y - r - 1) * w + x];
      out[y * w + x] = s;
    }
  }
}

/** One plane's edge pixels recoloured from their solid neighbours (in place). */
function plane(
  p: Uint8Array,
  a: Float32Array,
  w: number,
  h: number,
  r: number,
): void {
  const n = w * h;
  const wt = new Float32Array(n), wv = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // Solid neighbours count; a half-mixed one still carries the old background
    // (counted a little, where nothing solid is near).
    const k = a[i] * a[i];
    wt[i] = a[i] * 255 >= SOLID ? 1 : 0.01 * k * k;
    wv[i] = wt[i] * p[i];
  }
  const tmp = new Float32Array(n),
    sw = new Float32Array(n),
    sv = new Float32Array(n);
  boxSum(wt, w, h, r, tmp, sw);
  boxSum(wv, w, h, r, tmp, sv);
  for (let i = 0; i < n; i++) {
    if (a[i] * 255 >= SOLID || a[i] <= 0 || sw[i] < 0.02) continue;
    p[i] = Math.round(sv[i] / sw[i]);
  }
}

/**
 * A copy of the I420 photo `i420` (`w`×`h`) whose pixels at the edge of the person
 * mask `alpha` (0..255) hold the person's colour, not the photo's mix of person and
 * old background.
 */
export function decontaminate(
  i420: Uint8Array,
  alpha: Uint8Array,
  w: number,
  h: number,
): Uint8Array {
  const out = new Uint8Array(i420);
  const n = w * h, cw = w >> 1, ch = h >> 1;
  plane(out.subarray(0, n), Float32Array.from(alpha, (v) => v / 255), w, h, 4);
  const ac = new Float32Array(cw * ch);
  for (let y = 0; y < ch; y++) {
    for (let x = 0; x < cw; x++) {
      const i = 2 * y * w + 2 * x;
      ac[y * cw + x] =
        (alpha[i] + alpha[i + 1] + alpha[i + w] + alpha[i + w + 1]) / 1020;
    }
  }
  plane(out.subarray(n, n + cw * ch), ac, cw, ch, 3);
  plane(out.subarray(n + cw * ch), ac, cw, ch, 3);
  return out;
}
