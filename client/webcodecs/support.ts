/**
 * Whether a browser can play the socket's fMP4 with WebCodecs: the APIs it needs, the
 * browsers `decoder: "auto"` uses it in, and whether both decoders accept a stream's
 * configuration (from its init segment, ./fmp4.ts).
 */
import { type Fmp4Track, parseInitSegment } from "./fmp4.ts";

/**
 * Whether `decoder: "auto"` picks WebCodecs here: Chromium-based browsers, where it is
 * tested (tests/e2e/webcodecs_test.ts, the Chromium matrix). Firefox 153 and WebKitGTK
 * have the decoders, but in the browser matrix Firefox 153.7 played in 4 of 6 runs and
 * in the others never made a sound and its tab stopped answering, and WebKitGTK's page
 * crashed: they stay on MSE until that is understood (`decoder: "webcodecs"` forces
 * it).
 */
export function webCodecsPreferred(): boolean {
  const ua = (globalThis.navigator as { userAgentData?: { brands?: unknown } })
    ?.userAgentData;
  const brands = Array.isArray(ua?.brands) ? ua.brands : [];
  return webCodecsAvailable() &&
    brands.some((b: { brand?: string }) => b?.brand === "Chromium");
}

/** Whether this browser has what WebCodecs playback needs. */
export function webCodecsAvailable(): boolean {
  const g = globalThis as Record<string, unknown>;
  return typeof g.VideoDecoder === "function" &&
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
  return opus;
}
