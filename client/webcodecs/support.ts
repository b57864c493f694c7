/**
 * Whether a browser can play the socket's fMP4 with WebCodecs: the APIs it needs, the
 * engines `decoder: "auto"` uses it in, and whether both decoders accept a stream's
 * configuration (from its init segment, ./fmp4.ts).
 */
import { type Fmp4Track, parseInitSegment } from "./fmp4.ts";

function userAgent(): string {
  return globalThis.navigator?.userAgent ?? "";
}

/** A Chromium-based browser's user agent (it names WebKit too). */
const CHROMIUM_UA = /Chrome\/|Chromium\//;

/**
 * WebKit on Linux (WebKitGTK, WPE): its WebCodecs audio runs on GStreamer, and there
 * `AudioData.copyTo` crashes the page's web process (WebKitGTK 2.50.6: every call, in
 * any format, on the AAC and the Opus decoders' output; `allocationSize` and decoding
 * themselves work). Without a way to read decoded audio, WebCodecs cannot play there.
 */
function gstreamerWebKit(ua = userAgent()): boolean {
  return /AppleWebKit\//.test(ua) && !CHROMIUM_UA.test(ua) &&
    /Linux/.test(ua) && !/Android/.test(ua);
}

/**
 * Whether `decoder: "auto"` picks WebCodecs here: Chromium and Firefox, both played
 * with WebCodecs in the browser matrix (tests/e2e/matrix_*). Safari's WebKit is not
 * tested here: it plays MediaSource unless `decoder: "webcodecs"` asks.
 */
export function webCodecsPreferred(ua = userAgent()): boolean {
  return webCodecsAvailable(ua) &&
    (!/AppleWebKit\//.test(ua) || CHROMIUM_UA.test(ua));
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
 * Whether this browser has what WebCodecs playback needs, and can read decoded audio
 * (not WebKit on GStreamer).
 */
export function webCodecsAvailable(ua = userAgent()): boolean {
  const g = globalThis as Record<string, unknown>;
  return !gstreamerWebKit(ua) && typeof g.VideoDecoder === "function" &&
    typeof g.AudioDecoder === "function" &&
    typeof g.AudioWorkletNode === "function" &&
    typeof g.EncodedVideoChunk === "function";
}

/**
 * Whether both decoders accept the stream's configuration (`media.init`'s init
 * segment); false when either is missing or refuses.
 */
export async function webCodecsSupports(init: Uint8Array): Promise<boolean> {
  if (!webCodecsAvailable()) return false;
  try {
    const tracks = parseInitSegment(init);
    for (const t of tracks) {
      const r = t.kind === "video"
        ? await VideoDecoder.isConfigSupported(videoConfig(t))
        : await AudioDecoder.isConfigSupported(audioConfig(t));
      if (!r.supported) return false;
    }
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

export function audioConfig(t: Fmp4Track): AudioDecoderConfig {
  return {
    codec: t.codec,
    description: t.description,
    sampleRate: t.sampleRate,
    numberOfChannels: t.channels,
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
 * Whether this browser's `AudioDecoder` decodes the Opus the service sends a WebCodecs
 * player that asks for it (48 kHz mono; asked once).
 */
export function opusDecodable(): Promise<boolean> {
  opus ??= webCodecsAvailable()
    ? AudioDecoder.isConfigSupported({
      codec: "opus",
      sampleRate: 48000,
      numberOfChannels: 1,
    }).then((r) => r.supported === true, () => false)
    : Promise.resolve(false);
  void opus.then((ok) => opusAnswer = ok);
  return opus;
}
