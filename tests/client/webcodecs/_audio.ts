/** Audio fixtures of the WebCodecs player's decoder tests. */
import type { Fmp4Track } from "../../../client/webcodecs/fmp4.ts";

/** A 48-kHz mono audio track of `codec`, as an init segment would describe it. */
export function monoTrack(codec: string): Fmp4Track {
  return {
    trackId: 2,
    kind: "audio",
    timescale: 48000,
    codec,
    description: new Uint8Array(0),
    width: 0,
    height: 0,
    sampleRate: 48000,
    channels: 1,
    startOffset: 0,
    defaults: { duration: 0, size: 0, flags: 0 },
  };
}

/** A 20-ms CELT frame of silence (TOC: config 31, mono, one frame). */
export const SILENT_FRAME = Uint8Array.of(0xf8, 0xff, 0xfe);
