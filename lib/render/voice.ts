/**
 * The avatar's voice: agent PCM resampled to the stream rate, a bounded queue the
 * render loop takes one frame's worth from each tick, and the level and zero-crossing
 * rate of a frame (./face.ts turns frames into a face; ./visemes.ts classifies them).
 */

/** Audio rate of the stream (AAC-LC track and the raw input to the encoder). */
export const STREAM_RATE = 48_000;

/** Linear-interpolating resampler to `outRate`, continuous across chunks. */
export class Resampler {
  #inRate = 0;
  #prev = 0;
  #t = 1;

  constructor(readonly outRate = STREAM_RATE) {}

  /** Resamples one chunk of PCM16 mono at `inRate`. */
  process(pcm: Int16Array, inRate: number): Int16Array {
    if (inRate === this.outRate) return pcm.slice();
    if (inRate !== this.#inRate) {
      this.#inRate = inRate;
      this.#prev = 0;
      this.#t = 1;
    }
    const step = inRate / this.outRate;
    const last = pcm.length; // index of pcm's last sample in [prev, ...pcm]
    const n = Math.max(0, Math.ceil((last - this.#t) / step));
    const out = new Int16Array(n);
    let t = this.#t;
    for (let k = 0; k < n; k++) {
      const i = Math.floor(t);
      const a = i === 0 ? this.#prev : pcm[i - 1];
      const b = i + 1 > last ? a : pcm[i];
      out[k] = Math.round(a + (b - a) * (t - i));
      t += step;
    }
    if (last > 0) this.#prev = pcm[last - 1];
    this.#t = t - last;
    return out;
  }
}

/**
 * Most agent audio a session holds ahead of the stream, in ms. Engines stream faster than
 * real time (a 5-s answer in half a second), so the queue holds whole answers; past this
 * bound a push is refused (never silently dropped) and the media plane ends the session
 * as a provider failure (lib/media/turns.ts).
 */
export const MAX_AGENT_AUDIO_AHEAD_MS = 120_000;

/**
 * A FIFO of samples holding at most `maxSamples`: a push that would go beyond it is
 * refused whole (nothing already queued is ever dropped to make room).
 */
export class AudioQueue {
  #chunks: Int16Array[] = [];
  #length = 0;
  /** Samples refused because the queue was full, since creation. */
  refused = 0;

  constructor(
    readonly maxSamples = MAX_AGENT_AUDIO_AHEAD_MS * STREAM_RATE / 1000,
  ) {}

  get length(): number {
    return this.#length;
  }

  /** Appends samples; false (nothing queued) when they do not fit in the bound. */
  push(samples: Int16Array): boolean {
    if (samples.length === 0) return true;
    if (this.#length + samples.length > this.maxSamples) {
      this.refused += samples.length;
      return false;
    }
    this.#chunks.push(samples);
    this.#length += samples.length;
    return true;
  }

  /** Takes `n` samples, padding with silence; `real` says how many came from the queue. */
  take(n: number): { samples: Int16Array; real: number } {
    const samples = new Int16Array(n);
    let got = 0;
    while (got < n && this.#chunks.length > 0) {
      const head = this.#chunks[0];
      const use = Math.min(head.length, n - got);
      samples.set(head.subarray(0, use), got);
      got += use;
      if (use === head.length) this.#chunks.shift();
      else this.#chunks[0] = head.subarray(use);
    }
    this.#length -= got;
    return { samples, real: got };
  }

  /**
   * Copies the first samples queued into `out` (as many as fit) without taking them;
   * returns how many it copied.
   */
  peek(out: Int16Array): number {
    let got = 0;
    for (const chunk of this.#chunks) {
      if (got >= out.length) break;
      const use = Math.min(chunk.length, out.length - got);
      out.set(chunk.subarray(0, use), got);
      got += use;
    }
    return got;
  }

  /** Drops everything queued; returns how many samples that was. */
  clear(): number {
    const n = this.#length;
    this.#chunks = [];
    this.#length = 0;
    return n;
  }
}

export interface VoiceFeatures {
  /** Root mean square, 0..1 of full scale. */
  rms: number;
  /** Zero crossings per sample, 0..1. */
  zcr: number;
}

/** RMS and zero-crossing rate of one frame of audio. */
export function analyzeVoice(samples: Int16Array): VoiceFeatures {
  if (samples.length === 0) return { rms: 0, zcr: 0 };
  let sum = 0;
  let crossings = 0;
  let prev = samples[0];
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i];
    sum += s * s;
    if ((s >= 0) !== (prev >= 0)) crossings++;
    prev = s;
  }
  return {
    rms: Math.sqrt(sum / samples.length) / 32768,
    zcr: crossings / samples.length,
  };
}
