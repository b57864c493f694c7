/**
 * 2× upsampling of s16le mono PCM (48 → 96 kHz for the fMP4 encoder's AAC, see
 * ./ffmpeg.ts `AAC_RATE`): each input sample passes through, and a windowed-sinc
 * half-band filter (16 taps) makes the one between, from past samples only, so the
 * output is 2 × the input at every call and lags by 8 input samples (0.17 ms at
 * 48 kHz). State carries across calls, so chunk edges leave no seam.
 */

/** Input samples the output lags by (half the taps). */
export const UPSAMPLE_DELAY = 8;
const TAPS = 2 * UPSAMPLE_DELAY;

/** Taps for the point halfway between two input samples (Blackman-windowed sinc). */
function halfwayTaps(): Float64Array {
  const h = new Float64Array(TAPS);
  let sum = 0;
  for (let j = 0; j < TAPS; j++) {
    const x = j - UPSAMPLE_DELAY + 0.5; // distance from the halfway point
    const sinc = Math.sin(Math.PI * x) / (Math.PI * x);
    const n = (j + 0.5) / TAPS; // 0..1 across the window
    const w = 0.42 - 0.5 * Math.cos(2 * Math.PI * n) +
      0.08 * Math.cos(4 * Math.PI * n);
    h[j] = sinc * w;
    sum += h[j];
  }
  for (let j = 0; j < TAPS; j++) h[j] /= sum;
  return h;
}

const H = halfwayTaps();

export class Upsampler2x {
  /** The last TAPS input samples, oldest first. */
  #hist = new Float64Array(TAPS);

  process(pcm: Int16Array): Int16Array {
    const out = new Int16Array(pcm.length * 2);
    const hist = this.#hist;
    for (let i = 0; i < pcm.length; i++) {
      hist.copyWithin(0, 1);
      hist[TAPS - 1] = pcm[i];
      // The sample UPSAMPLE_DELAY back, then the point halfway to the next one.
      out[2 * i] = hist[TAPS - 1 - UPSAMPLE_DELAY];
      let acc = 0;
      for (let j = 0; j < TAPS; j++) acc += H[j] * hist[j];
      out[2 * i + 1] = acc > 32767
        ? 32767
        : acc < -32768
        ? -32768
        : Math.round(acc);
    }
    return out;
  }
}
