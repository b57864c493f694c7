/**
 * A WebAssembly Opus decoder (npm `opus-decoder`: libopus built to WebAssembly, the
 * module inside the package, nothing fetched at run time) behind the audio decoder port
 * (./audio_decoder.ts): the audio of WebCodecs playback where WebCodecs' own decoded
 * audio cannot be read (WebKit on GStreamer, ./support.ts). Imported dynamically and
 * only there, so a bundle that splits it off (`deno bundle --code-splitting`, Vite,
 * webpack) never sends it to other browsers. It decodes on the page's thread, a frame
 * at a time as segments land (a 20-ms mono frame takes a fraction of a millisecond).
 */
import { OpusDecoder } from "opus-decoder";
import type { AudioFrameDecoder, PcmSink } from "./audio_decoder.ts";
import type { Fmp4Track } from "./fmp4.ts";

/** The smallest WebAssembly module (magic and version, no sections). */
const EMPTY_MODULE = Uint8Array.of(0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0);

/** How long a decoder may take to start before this path is given up (ms). */
export const READY_MS = 5000;

/** Frames held while a stream's decoder starts, at most (2 s of 20-ms frames). */
const MAX_QUEUED = 100;

/**
 * Resolves once a decoder runs here; rejects when none can: the page's CSP forbids
 * WebAssembly (`script-src` without `'wasm-unsafe-eval'`), or a decoder did not start
 * within `READY_MS`. The caller then plays MediaSource instead.
 */
export async function wasmOpusReady(readyMs = READY_MS): Promise<void> {
  // Asked with a module of its own first (WebKit refuses the instance, not the
  // compile): the library does not pass a refusal on (its `ready` would never settle,
  // and the refusal would go unhandled).
  await WebAssembly.instantiate(EMPTY_MODULE);
  const probe = new OpusDecoder({ channels: 1, sampleRate: 48000 });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      probe.ready,
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error("the Opus decoder did not start")),
          readyMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
  probe.free();
}

/** One stream's Opus decoder: frames that come while it starts are held, then decoded. */
export class WasmOpusDecoder implements AudioFrameDecoder {
  readonly #dec: OpusDecoder<48000>;
  #ready = false;
  #closed = false;
  #queue: Array<{ data: Uint8Array; ptsUs: number }> = [];

  constructor(track: Fmp4Track, private readonly sink: PcmSink) {
    this.#dec = new OpusDecoder({
      channels: track.channels,
      sampleRate: 48000,
    });
    this.#dec.ready.then(() => {
      if (this.#closed) return this.#dec.free();
      this.#ready = true;
      for (const f of this.#queue.splice(0)) this.#run(f.data, f.ptsUs);
    }, (err) => {
      if (!this.#closed) sink.error(`The Opus decoder did not start: ${err}`);
    });
  }

  decode(data: Uint8Array, ptsUs: number): void {
    if (this.#closed) return;
    if (this.#ready) return this.#run(data, ptsUs);
    this.#queue.push({ data, ptsUs });
    if (this.#queue.length > MAX_QUEUED) this.#queue.shift();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    if (this.#ready) this.#dec.free();
  }

  #run(data: Uint8Array, ptsUs: number): void {
    const r = this.#dec.decodeFrame(data);
    if (r.errors.length > 0) {
      this.sink.error(
        `The Opus decoder could not decode: ${r.errors[0].message}`,
      );
    }
    if (r.samplesDecoded > 0) {
      this.sink.pcm(
        r.channelData[0],
        ptsUs,
        r.samplesDecoded * 1e6 / r.sampleRate,
      );
    }
  }
}
