/**
 * The audio decoder port of WebCodecs playback (./player.ts): encoded frames of the
 * stream's audio track in, mono PCM out. Two implementations: WebCodecs'
 * `AudioDecoder`, read with `AudioData.copyTo` (here), and a WebAssembly Opus decoder
 * (./wasm_opus.ts) where `copyTo` cannot be used (WebKit on GStreamer: ./support.ts
 * picks, and loads the WebAssembly one only there), held by a `DeferredAudioDecoder`
 * until it has loaded.
 */
import type { Fmp4Track } from "./fmp4.ts";

/** Where a decoder's output goes. */
export interface PcmSink {
  /** Decoded mono PCM at the track's rate (the caller owns it), from media time `ptsUs`. */
  pcm(pcm: Float32Array, ptsUs: number, durationUs: number): void;
  /** A frame could not be decoded; the decoder goes on with the next. */
  error(message: string): void;
}

/** One stream's audio decoder. */
export interface AudioFrameDecoder {
  /** Decodes one frame (`data` is not kept past the call's return, or is copied). */
  decode(data: Uint8Array, ptsUs: number, durationUs: number): void;
  close(): void;
}

/**
 * Makes the decoder of a stream's audio track, or null when this browser cannot decode
 * it (AAC without `AudioData.copyTo`): the stream then plays without sound.
 */
export type MakeAudioDecoder = (
  track: Fmp4Track,
  sink: PcmSink,
) => AudioFrameDecoder | null;

export function audioConfig(t: Fmp4Track): AudioDecoderConfig {
  return {
    codec: t.codec,
    description: t.description,
    sampleRate: t.sampleRate,
    numberOfChannels: t.channels,
  };
}

/** WebCodecs' `AudioDecoder`; replaced at once after a decode error. */
export class WebCodecsAudioDecoder implements AudioFrameDecoder {
  #dec: AudioDecoder | null;
  #closed = false;

  constructor(
    private readonly track: Fmp4Track,
    private readonly sink: PcmSink,
  ) {
    this.#dec = this.#make();
  }

  decode(data: Uint8Array, ptsUs: number, durationUs: number): void {
    if (this.#dec?.state !== "configured") return;
    this.#dec.decode(
      new EncodedAudioChunk({
        type: "key",
        timestamp: ptsUs,
        duration: durationUs,
        data,
      }),
    );
  }

  close(): void {
    this.#closed = true;
    if (this.#dec && this.#dec.state !== "closed") this.#dec.close();
    this.#dec = null;
  }

  #make(): AudioDecoder {
    const dec: AudioDecoder = new AudioDecoder({
      output: (d) => this.#output(d),
      error: (e) => {
        if (this.#dec !== dec) return;
        this.#dec = this.#closed ? null : this.#make();
        if (!this.#closed) {
          this.sink.error(`The browser could not decode: ${e.message}`);
        }
      },
    });
    dec.configure(audioConfig(this.track));
    return dec;
  }

  #output(d: AudioData): void {
    try {
      if (this.#closed) return;
      const pcm = new Float32Array(d.numberOfFrames);
      d.copyTo(pcm, { planeIndex: 0, format: "f32-planar" });
      this.sink.pcm(pcm, d.timestamp, d.duration);
    } finally {
      d.close();
    }
  }
}

/** Frames a deferred decoder holds, at most (2 s of 20-ms frames). */
const MAX_HELD = 100;

/**
 * A decoder that is still being made (the WebAssembly one loads): frames that come
 * before it are held, then decoded in order; none is made (null), they are dropped.
 */
export class DeferredAudioDecoder implements AudioFrameDecoder {
  #dec: AudioFrameDecoder | null = null;
  #held: Array<{ data: Uint8Array; ptsUs: number; durationUs: number }> = [];
  /** Made, or known never to be. */
  #settled = false;
  #closed = false;

  constructor(made: Promise<AudioFrameDecoder | null>) {
    const settle = () => {
      this.#settled = true;
      const held = this.#held;
      this.#held = [];
      return held;
    };
    void made.then((dec) => {
      const held = settle();
      if (!dec) return;
      if (this.#closed) return dec.close();
      this.#dec = dec;
      for (const f of held) dec.decode(f.data, f.ptsUs, f.durationUs);
    }, settle);
  }

  decode(data: Uint8Array, ptsUs: number, durationUs: number): void {
    if (this.#dec) return this.#dec.decode(data, ptsUs, durationUs);
    if (this.#closed || this.#settled) return;
    this.#held.push({ data, ptsUs, durationUs });
    if (this.#held.length > MAX_HELD) this.#held.shift();
  }

  close(): void {
    this.#closed = true;
    this.#held = [];
    this.#dec?.close();
    this.#dec = null;
  }
}
