/**
 * Spectral features of one 40-ms render frame of agent audio (48 kHz): the frame is
 * decimated to 16 kHz (a 3-tap box filter, enough below the 8-kHz band edge we use),
 * Hann-windowed, transformed (radix-2 FFT of 1,024 points), pooled into 26 mel bands
 * (100 Hz – 7.6 kHz) and turned into MFCCs c1…c12 by a DCT-II of the log band energies.
 * c0 (overall level) is left out so the viseme classifier sees the shape of the
 * spectrum, not the loudness. Everything is precomputed once; a frame costs a few µs.
 */

/** MFCCs computed per frame (c1…c12). */
export const MFCC_COUNT = 12;
const FFT_N = 1024;
const BANDS = 26;
const RATE = 16_000;
const F_LO = 100;
const F_HI = 7600;

const hz2mel = (f: number) => 2595 * Math.log10(1 + f / 700);
const mel2hz = (m: number) => 700 * (10 ** (m / 2595) - 1);

/** Bit-reversal table and twiddles for the FFT. */
const rev = new Uint16Array(FFT_N);
const cosT = new Float64Array(FFT_N / 2);
const sinT = new Float64Array(FFT_N / 2);
{
  const bits = Math.log2(FFT_N);
  for (let i = 0; i < FFT_N; i++) {
    let r = 0;
    for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
    rev[i] = r;
  }
  for (let i = 0; i < FFT_N / 2; i++) {
    cosT[i] = Math.cos(-2 * Math.PI * i / FFT_N);
    sinT[i] = Math.sin(-2 * Math.PI * i / FFT_N);
  }
}

/** Triangular mel filters as (first bin, weights) pairs. */
const filters: Array<{ start: number; w: Float64Array }> = [];
{
  const lo = hz2mel(F_LO);
  const hi = hz2mel(F_HI);
  const edges: number[] = [];
  for (let i = 0; i < BANDS + 2; i++) {
    edges.push(mel2hz(lo + (hi - lo) * i / (BANDS + 1)) * FFT_N / RATE);
  }
  for (let b = 0; b < BANDS; b++) {
    const [l, c, r] = [edges[b], edges[b + 1], edges[b + 2]];
    const start = Math.ceil(l);
    const end = Math.floor(r);
    const w = new Float64Array(Math.max(0, end - start + 1));
    for (let k = start; k <= end; k++) {
      w[k - start] = k <= c ? (k - l) / (c - l) : (r - k) / (r - c);
    }
    filters.push({ start, w });
  }
}

/** DCT-II rows 1…MFCC_COUNT over the bands. */
const dct: Float64Array[] = [];
for (let k = 1; k <= MFCC_COUNT; k++) {
  const row = new Float64Array(BANDS);
  for (let b = 0; b < BANDS; b++) {
    row[b] = Math.cos(Math.PI * k * (b + 0.5) / BANDS) * Math.sqrt(2 / BANDS);
  }
  dct.push(row);
}

const re = new Float64Array(FFT_N);
const im = new Float64Array(FFT_N);
const bandLog = new Float64Array(BANDS);
const windowCache = new Map<number, Float64Array>();

function hann(n: number): Float64Array {
  let w = windowCache.get(n);
  if (!w) {
    w = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      w[i] = 0.5 - 0.5 * Math.cos(2 * Math.PI * (i + 0.5) / n);
    }
    windowCache.set(n, w);
  }
  return w;
}

function fft(): void {
  for (let i = 0; i < FFT_N; i++) {
    const j = rev[i];
    if (j > i) {
      const tr = re[i];
      re[i] = re[j];
      re[j] = tr;
      const ti = im[i];
      im[i] = im[j];
      im[j] = ti;
    }
  }
  for (let size = 2; size <= FFT_N; size <<= 1) {
    const half = size >> 1;
    const step = FFT_N / size;
    for (let i = 0; i < FFT_N; i += size) {
      for (let k = 0; k < half; k++) {
        const c = cosT[k * step];
        const s = sinT[k * step];
        const a = i + k;
        const b = a + half;
        const xr = re[b] * c - im[b] * s;
        const xi = re[b] * s + im[b] * c;
        re[b] = re[a] - xr;
        im[b] = im[a] - xi;
        re[a] += xr;
        im[a] += xi;
      }
    }
  }
}

/**
 * MFCCs c1…c12 of one frame of 48-kHz PCM16 (any length up to 3,072 samples; a render
 * frame is 1,920) into `out`. A silent frame gives all zeros.
 */
export function mfcc(
  samples: Int16Array,
  out: Float64Array = new Float64Array(MFCC_COUNT),
): Float64Array {
  const n = Math.min(FFT_N, Math.floor(samples.length / 3));
  const win = hann(n);
  re.fill(0);
  im.fill(0);
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const j = 3 * i;
    const x = (samples[j] + samples[j + 1] + samples[j + 2]) / 98304;
    // Pre-emphasis (0.95) lifts the formants above the glottal tilt.
    re[i] = (x - 0.95 * prev) * win[i];
    prev = x;
  }
  fft();
  for (let b = 0; b < BANDS; b++) {
    const { start, w } = filters[b];
    let e = 0;
    for (let k = 0; k < w.length; k++) {
      const r = re[start + k];
      const q = im[start + k];
      e += w[k] * (r * r + q * q);
    }
    bandLog[b] = Math.log(e + 1e-10);
  }
  for (let k = 0; k < MFCC_COUNT; k++) {
    const row = dct[k];
    let s = 0;
    for (let b = 0; b < BANDS; b++) s += row[b] * bandLog[b];
    out[k] = s;
  }
  return out;
}
