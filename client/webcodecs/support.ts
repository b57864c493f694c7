/**
 * Whether a browser can play the socket's fMP4 with WebCodecs: the APIs it needs, the
 * engines `decoder: "auto"` uses it in, whether both decoders accept a stream's
 * configuration (from its init segment, ./fmp4.ts), and which audio decoder
 * (./audio_decoder.ts) reads its sound.
 */
import { type Fmp4Track, parseInitSegment } from "./fmp4.ts";
import {
  audioConfig,
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
 * segment); false when either is missing or refuses. In WebKit on GStreamer the audio
 * is not `AudioDecoder`'s: there the WebAssembly Opus decoder must run instead.
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
    if (wasm && !await opusDecodable()) return false;
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
 * for it (48 kHz mono; asked once): its `AudioDecoder` takes it, or in WebKit on
 * GStreamer the WebAssembly decoder runs.
 */
export function opusDecodable(): Promise<boolean> {
  opus ??= gstreamerWebKit()
    ? audioDecoders().then((d) => d !== null)
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

let decoders: Promise<MakeAudioDecoder | null> | null = null;

/**
 * How this page decodes the stream's audio (asked once, and early: the player asks as
 * it is made): `AudioDecoder`; in WebKit on GStreamer the WebAssembly Opus decoder,
 * imported now. Null when there is none: no WebCodecs, or the WebAssembly decoder
 * cannot run (a CSP without `'wasm-unsafe-eval'`, its chunk not served), and the player
 * plays MediaSource.
 */
export function audioDecoders(): Promise<MakeAudioDecoder | null> {
  decoders ??= loadAudioDecoders();
  return decoders;
}

/** `audioDecoders`, not kept: what a page with user agent `ua` gets. */
export async function loadAudioDecoders(
  ua = userAgent(),
): Promise<MakeAudioDecoder | null> {
  if (!webCodecsAvailable(ua)) return null;
  if (!gstreamerWebKit(ua)) {
    return (track, sink) => new WebCodecsAudioDecoder(track, sink);
  }
  try {
    const wasm = await import("./wasm_opus.ts");
    await wasm.wasmOpusReady();
    return (track, sink) =>
      track.codec === "opus" ? new wasm.WasmOpusDecoder(track, sink) : null;
  } catch {
    return null;
  }
}
