/**
 * Microphone capture for the browser client: the AudioWorklet processor (as module
 * source text, loaded from a Blob URL unless the page gives its own `workletUrl`) and
 * the main-thread encoder that turns its Float32 blocks into PCM16LE mono frames at
 * the rate declared with `audio.config` (docs/media-protocol.md).
 */

/** Name the processor registers under. */
export const PCM_WORKLET_PROCESSOR = "avatar-pcm-capture";

/**
 * Module source of the processor: mixes the input down to mono and posts Float32Array
 * blocks of `processorOptions.chunkSamples` samples (transferred, not copied). Plain
 * JavaScript so that it can be served as is (`static` copy) or turned into a Blob URL.
 */
export const PCM_WORKLET_SOURCE = `
class AvatarPcmCapture extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const opts = (options && options.processorOptions) || {};
    this.size = Math.max(128, opts.chunkSamples | 0 || 1024);
    this.chunk = new Float32Array(this.size);
    this.filled = 0;
  }
  process(inputs) {
    const input = inputs[0];
    if (input && input.length > 0) {
      const channels = input.length;
      const n = input[0].length;
      for (let i = 0; i < n; i++) {
        let s = 0;
        for (let c = 0; c < channels; c++) s += input[c][i];
        this.chunk[this.filled++] = s / channels;
        if (this.filled === this.size) {
          this.port.postMessage(this.chunk, [this.chunk.buffer]);
          this.chunk = new Float32Array(this.size);
          this.filled = 0;
        }
      }
    }
    return true;
  }
}
registerProcessor(${JSON.stringify(PCM_WORKLET_PROCESSOR)}, AvatarPcmCapture);
`;

/** Float samples in [-1, 1] to signed 16-bit, clamped. */
export function floatToPcm16(x: number): number {
  const s = x < -1 ? -1 : x > 1 ? 1 : x;
  return s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
}

/**
 * Streaming resampler for speech: averages the input samples each output sample
 * spans when downsampling (a box filter against aliasing), interpolates linearly when
 * upsampling. Keeps its position across blocks, so block boundaries leave no clicks.
 */
export class Resampler {
  readonly #ratio: number;
  #buf = new Float32Array(0);
  #pos = 0;

  constructor(readonly inRate: number, readonly outRate: number) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError("rates must be > 0");
    this.#ratio = inRate / outRate;
  }

  /** Resamples one block; may return fewer samples until more input arrives. */
  process(input: Float32Array): Float32Array {
    if (this.#ratio === 1) return input;
    const buf = new Float32Array(this.#buf.length + input.length);
    buf.set(this.#buf);
    buf.set(input, this.#buf.length);
    const out: number[] = [];
    const r = this.#ratio;
    let pos = this.#pos;
    for (;;) {
      const i0 = Math.floor(pos);
      if (r < 1) {
        if (i0 + 1 >= buf.length) break;
        const f = pos - i0;
        out.push(buf[i0] * (1 - f) + buf[i0 + 1] * f);
      } else {
        const i1 = Math.max(i0 + 1, Math.floor(pos + r));
        if (i1 > buf.length) break;
        let s = 0;
        for (let i = i0; i < i1; i++) s += buf[i];
        out.push(s / (i1 - i0));
      }
      pos += r;
    }
    const keep = Math.min(Math.floor(pos), buf.length);
    this.#buf = buf.slice(keep);
    this.#pos = pos - keep;
    return Float32Array.from(out);
  }
}

/**
 * Float32 blocks at `inRate` in, PCM16LE mono frames of `frameMs` at `outRate` out:
 * what the browser sends as binary frames after `{"type":"audio.config"}`.
 */
export class PcmFramer {
  readonly frameSamples: number;
  readonly #resampler: Resampler;
  #frame: Int16Array;
  #filled = 0;

  constructor(inRate: number, readonly outRate: number, frameMs = 20) {
    this.#resampler = new Resampler(inRate, outRate);
    this.frameSamples = Math.max(1, Math.round(outRate * frameMs / 1000));
    this.#frame = new Int16Array(this.frameSamples);
  }

  /** Feeds one block; returns every frame completed by it (little-endian bytes). */
  push(block: Float32Array): Uint8Array[] {
    const samples = this.#resampler.process(block);
    const frames: Uint8Array[] = [];
    for (let i = 0; i < samples.length; i++) {
      this.#frame[this.#filled++] = floatToPcm16(samples[i]);
      if (this.#filled === this.frameSamples) {
        frames.push(int16ToLeBytes(this.#frame));
        this.#frame = new Int16Array(this.frameSamples);
        this.#filled = 0;
      }
    }
    return frames;
  }
}

/** PCM16 samples as little-endian bytes, whatever the platform's endianness. */
export function int16ToLeBytes(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) {
    view.setInt16(i * 2, samples[i], true);
  }
  return out;
}
