/**
 * SSIM (Wang et al. 2004) of two luma planes, as the authors' reference code computes
 * it: both images first averaged down by f = round(min(w, h) / 256) (2 at 512×512, the
 * scale at which a viewer sees the picture), then 8×8 windows every 4 pixels, leaving
 * out the windows whose centre `skip` (in full-size pixels) marks.
 */
export function ssim(
  a: Uint8Array,
  b: Uint8Array,
  w: number,
  h: number,
  skip: (x: number, y: number) => boolean = () => false,
): number {
  const f = Math.max(1, Math.round(Math.min(w, h) / 256));
  const sw = Math.floor(w / f), sh = Math.floor(h / f);
  const down = (p: Uint8Array) => {
    const out = new Float64Array(sw * sh);
    for (let y = 0; y < sh; y++) {
      for (let x = 0; x < sw; x++) {
        let s = 0;
        for (let j = 0; j < f; j++) {
          for (let i = 0; i < f; i++) s += p[(y * f + j) * w + x * f + i];
        }
        out[y * sw + x] = s / (f * f);
      }
    }
    return out;
  };
  const da = down(a), db = down(b);
  const c1 = (0.01 * 255) ** 2, c2 = (0.03 * 255) ** 2;
  let sum = 0, n = 0;
  for (let y0 = 0; y0 + 8 <= sh; y0 += 4) {
    for (let x0 = 0; x0 + 8 <= sw; x0 += 4) {
      if (skip((x0 + 4) * f, (y0 + 4) * f)) continue;
      let sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
      for (let y = y0; y < y0 + 8; y++) {
        for (let x = x0; x < x0 + 8; x++) {
          const p = da[y * sw + x], q = db[y * sw + x];
          sa += p, sb += q, saa += p * p, sbb += q * q, sab += p * q;
        }
      }
      const ma = sa / 64, mb = sb / 64;
      const va = saa / 64 - ma * ma, vb = sbb / 64 - mb * mb;
      const cov = sab / 64 - ma * mb;
      sum += ((2 * ma * mb + c1) * (2 * cov + c2)) /
        ((ma * ma + mb * mb + c1) * (va + vb + c2));
      n++;
    }
  }
  return sum / n;
}
