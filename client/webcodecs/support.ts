/**
 * Whether a browser can play the socket's fMP4 with WebCodecs: the APIs it needs, the
 * engines `decoder: "auto"` uses it in, whether both decoders accept a stream's
 * configuration (from its init segment, ./fmp4.ts), and which audio decoder
 * (./audio_decoder.ts) reads its sound.
 */
import { type Fmp4Track, parseInitSegment } from "./fmp4.ts";
import {
  audioConfig,
  DeferredAudioDecoder,
  type MakeAudioDecoder,
  WebCodecsAudioDecoder,
} from "./audio_decoder.ts";

function userAgent(): string {
  return globalThis.navigator?.userAgent ?? "";
}

/** A Chromium-based browser's user agent (it names WebKit too). */
const CHROMIUM_UA = /Chrome\/|Chromium\//;

/**
 * WebKit on Linux (WebKitGTK, WPE): its WebCodecs audio runs on GStreamer, and there
 * `AudioData.copyTo` crashes the page's web process (WebKitGTK 2.50.6: every call, in
 * any format, on the AAC and the Opus decoders' output; `allocationSize` and decoding
 * themselves work). Its `VideoDecoder` decodes the stream and its frames draw (25 fps
 * on the 2D and the stacked-alpha canvas): the sound is decoded by a WebAssembly Opus
 * decoder instead (./wasm_opus.ts), and AAC not at all.
 */
export function gstreamerWebKit(ua = userAgent()): boolean {
  return /AppleWebKit\//.test(ua) && !CHROMIUM_UA.test(ua) &&
    /Linux/.test(ua) && !/Android/.test(ua);
}

/**
 * Whether `decoder: "auto"` picks WebCodecs here: Chromium, Firefox and WebKit on Linux,
 * all played with WebCodecs in the browser matrix (tests/e2e/matrix_*). Safari's WebKit
 * is not tested here: it plays MediaSource unless `decoder: "webcodecs"` asks.
 */
export function webCodecsPreferred(ua = userAgent()): boolean {
  return webCodecsAvailable(ua) &&
    (!/AppleWebKit\//.test(ua) || CHROMIUM_UA.test(ua) || gstreamerWebKit(ua));
}

/**
 * Whether `AudioContext.outputLatency` may be read while audio plays. Not in Firefox:
 * in its browser matrix (153.8 ESR, PulseAudio) the tab stopped answering within
 * seconds in most runs where the player read it on each frame, and still when it read
 * it once a second, while every run that never read it played (3 of 3 reading
 * `baseLatency` alone on each frame; 8 of 8 reading neither). There the clock counts
 * the base latency only, so video leads the sound by the device's output latency.
 */
export function outputLatencyReadable(ua = userAgent()): boolean {
  return !/\bFirefox\//.test(ua);
}

/**
 * Whether this browser has what WebCodecs playback needs: the video decoder, an audio
 * worklet, and an audio decoder whose output can be read (`AudioDecoder`; WebKit on
 * GStreamer: WebAssembly, for ./wasm_opus.ts).
 */
export function webCodecsAvailable(ua = userAgent()): boolean {
  const g = globalThis as Record<string, unknown>;
  const audio = gstreamerWebKit(ua)
    ? typeof g.WebAssembly === "object"
    : typeof g.AudioDecoder === "function";
  return audio && typeof g.VideoDecoder === "function" &&
    typeof g.AudioWorkletNode === "function" &&
    typeof g.EncodedVideoChunk === "function";
}

/**
 * Whether AAC audio can be decoded here: not in WebKit on GStreamer, where the only
 * readable decoder is the WebAssembly Opus one.
 */
export function aacDecodable(ua = userAgent()): boolean {
  return !gstreamerWebKit(ua);
}

/**
 * Whether both decoders accept the stream's configuration (`media.init`'s init
 * segment); false when either is missing or refuses. Whether `AudioDecoder` takes
 * Opus is known when it resolves (`opusKnown`: whether the stream's AAC is decoded at
 * all). In WebKit on GStreamer the audio is not `AudioDecoder`'s: there the video
 * decides, unless the WebAssembly decoder is already known not to run; its load is not
 * waited for (the first stream's AAC is not decoded there anyway: its picture plays
 * meanwhile).
 */
export async function webCodecsSupports(init: Uint8Array): Promise<boolean> {
  if (!webCodecsAvailable()) return false;
  const wasm = gstreamerWebKit();
  try {
    const tracks = parseInitSegment(init);
    for (const t of tracks) {
      if (wasm && t.kind === "audio") continue;
      const r = t.kind === "video"
        ? await VideoDecoder.isConfigSupported(videoConfig(t))
        : await AudioDecoder.isConfigSupported(audioConfig(t));
      if (!r.supported) return false;
    }
    if (wasm && opusKnown() === false) return false;
    if (!wasm) await opusDecodable();
    return tracks.some((t) => t.kind === "video");
  } catch {
    return false;
  }
}

export function videoConfig(t: Fmp4Track): VideoDecoderConfig {
  return {
    codec: t.codec,
    description: t.description,
    optimizeForLatency: true,
    codedWidth: t.width,
    codedHeight: t.height,
  };
}

let opus: Promise<boolean> | null = null;
let opusAnswer: boolean | null = null;

/** `opusDecodable`'s answer once known, else null (and the question is asked). */
export function opusKnown(): boolean | null {
  void opusDecodable();
  return opusAnswer;
}

/**
 * Whether this browser decodes the Opus the service sends a WebCodecs player that asks
 * for it (48 kHz mono; asked once, and early: the player asks as it is made): its
 * `AudioDecoder` takes it, or in WebKit on GStreamer the WebAssembly decoder runs (it
 * starts loading now).
 */
export function opusDecodable(): Promise<boolean> {
  opus ??= gstreamerWebKit()
    ? wasmOpus().then((m) => m !== null)
    : webCodecsAvailable()
    ? AudioDecoder.isConfigSupported({
      codec: "opus",
      sampleRate: 48000,
      numberOfChannels: 1,
    }).then((r) => r.supported === true, () => false)
    : Promise.resolve(false);
  void opus.then((ok) => opusAnswer = ok);
  return opus;
}

type WasmOpus = typeof import("./wasm_opus.ts");

let wasm: Promise<WasmOpus | null> | null = null;

/** `loadWasmOpus`, once a page. */
function wasmOpus(): Promise<WasmOpus | null> {
  wasm ??= loadWasmOpus();
  return wasm;
}

/**
 * The WebAssembly Opus decoder's module, imported (a chunk of its own where the
 * bundle is split) and started; null where it cannot run: a CSP without
 * `'wasm-unsafe-eval'`, its chunk not served.
 */
export async function loadWasmOpus(): Promise<WasmOpus | null> {
  try {
    const m = await import("./wasm_opus.ts");
    await m.wasmOpusReady();
    return m;
  } catch {
    return null;
  }
}

/**
 * How this page decodes the stream's audio, or null without WebCodecs: `AudioDecoder`;
 * in WebKit on GStreamer the WebAssembly Opus decoder, Opus only, held by a
 * `DeferredAudioDecoder` until `load` (default: once a page) has it; where it cannot
 * run, nothing is heard (the player then turns to MSE).
 */
export function audioDecoders(
  ua = userAgent(),
  load: () => Promise<WasmOpus | null> = wasmOpus,
): MakeAudioDecoder | null {
  if (!webCodecsAvailable(ua)) return null;
  if (!gstreamerWebKit(ua)) {
    return (track, sink) => new WebCodecsAudioDecoder(track, sink);
  }
  return (track, sink) =>
    track.codec === "opus"
      ? new DeferredAudioDecoder(
        load().then((m) => m && new m.WasmOpusDecoder(track, sink)),
      )
      : null;
}
