/**
 * Streaming PCM16 mono resampling: linear interpolation with its position carried across
 * chunks (no clicks or drift at chunk borders), preceded when downsampling by a
 * windowed-sinc low-pass FIR (also stateful) so that content above the new Nyquist
 * frequency does not fold back as aliasing.
 */

const FIR_TAPS = 31;

function lowPassTaps(cutoff: number): Float32Array {
  // cutoff as a fraction of the input rate (0 < cutoff < 0.5); Blackman window.
  const taps = new Float32Array(FIR_TAPS);
  const mid = (FIR_TAPS - 1) / 2;
  let sum = 0;
  for (let i = 0; i < FIR_TAPS; i++) {
    const x = i - mid;
    const sinc = x === 0
      ? 2 * cutoff
      : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    const w = 0.42 - 0.5 * Math.cos((2 * Math.PI * i) / (FIR_TAPS - 1)) +
      0.08 * Math.cos((4 * Math.PI * i) / (FIR_TAPS - 1));
    taps[i] = sinc * w;
    sum += taps[i];
  }
  for (let i = 0; i < FIR_TAPS; i++) taps[i] /= sum;
  return taps;
}

function clamp16(v: number): number {
  return v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
}

/** A resampler for one stream; feed it consecutive chunks. */
export class Resampler {
  readonly step: number;
  #pos = 0;
  #prev = 0;
  #hasPrev = false;
  #taps: Float32Array | null;
  #history: Float32Array;

  constructor(readonly inRate: number, readonly outRate: number) {
    if (!(inRate > 0 && outRate > 0)) {
      throw new RangeError("sample rates must be positive");
    }
    this.step = inRate / outRate;
    this.#taps = outRate < inRate ? lowPassTaps(0.45 * outRate / inRate) : null;
    this.#history = new Float32Array(FIR_TAPS - 1);
  }

  #filter(input: Int16Array): Float32Array {
    const taps = this.#taps;
    if (!taps) return Float32Array.from(input);
    const h = this.#history;
    const ext = new Float32Array(h.length + input.length);
    ext.set(h);
    ext.set(input, h.length);
    const out = new Float32Array(input.length);
    for (let n = 0; n < input.length; n++) {
      let acc = 0;
      for (let k = 0; k < FIR_TAPS; k++) acc += taps[k] * ext[n + k];
      out[n] = acc;
    }
    this.#history = ext.slice(ext.length - h.length);
    return out;
  }

  /** Resamples the next chunk; the output length follows the running position. */
  push(input: Int16Array): Int16Array {
    if (this.inRate === this.outRate) return input;
    if (input.length === 0) return new Int16Array(0);
    const x = this.#filter(input);
    const n = x.length;
    const out: number[] = [];
    let t = this.#pos;
    // Position -1 is the previous chunk's last sample.
    if (!this.#hasPrev && t < 0) t = 0;
    while (t <= n - 1) {
      const i = Math.floor(t);
      const frac = t - i;
      const a = i < 0 ? this.#prev : x[i];
      const b = i + 1 < n ? x[i + 1] : x[i];
      out.push(clamp16(a + (b - a) * frac));
      t += this.step;
    }
    this.#pos = t - n;
    this.#prev = x[n - 1];
    this.#hasPrev = true;
    return Int16Array.from(out);
  }
}

/** Keeps one resampler per input rate, so a rate change starts a fresh stream. */
export class StreamResampler {
  #r: Resampler | null = null;
  constructor(readonly outRate: number) {}

  /** Converts a chunk at `inRate` to `outRate`. */
  push(input: Int16Array, inRate: number): Int16Array {
    if (inRate === this.outRate) return input;
    if (!this.#r || this.#r.inRate !== inRate) {
      this.#r = new Resampler(inRate, this.outRate);
    }
    return this.#r.push(input);
  }
}

/** PCM16LE bytes of `pcm` (a copy in little-endian order). */
export function pcmToBytes(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < pcm.length; i++) view.setInt16(i * 2, pcm[i], true);
  return out;
}

/** Samples of PCM16LE `bytes` (an odd trailing byte is ignored). */
export function bytesToPcm(bytes: Uint8Array): Int16Array {
  const n = bytes.length >> 1;
  const out = new Int16Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Base64 of PCM16LE samples. */
export function pcmToBase64(pcm: Int16Array): string {
  const bytes = pcmToBytes(pcm);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** PCM16LE samples of base64 text; throws on invalid base64. */
export function base64ToPcm(b64: string): Int16Array {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytesToPcm(bytes);
}
