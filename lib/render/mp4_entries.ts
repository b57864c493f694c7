/**
 * The sample entries of the init segment's stsd boxes (./fmp4_writer.ts): `avc1` for the
 * H.264 track and, for the audio track, `mp4a` (AAC-LC, the default) or `Opus` with its
 * `dOps` box ("Encapsulation of Opus in ISO Base Media File Format", DECISIONS 6's
 * audio codec for WebCodecs clients that ask for it).
 */
import { box, concat, fullBox, u16be, u32be, zeros } from "./mp4_boxes.ts";

/** The audio track's id (the esds names it). */
export const AUDIO_TRACK_ID = 2;

/** Opus is always decoded at 48 kHz: its track's timescale whatever the input was. */
export const OPUS_RATE = 48000;

export interface VideoConfig {
  width: number;
  height: number;
  timescale: number;
  /** The AVCDecoderConfigurationRecord (the avcC box's body). */
  avcC: Uint8Array;
}

/** An AAC-LC track (`codec` may be left out: AAC is what a track is by default). */
export interface AacConfig {
  codec?: "aac";
  sampleRate: number;
  channels: number;
  /** The AudioSpecificConfig. */
  asc: Uint8Array;
  /** Average bit rate (bit/s), for the esds. */
  bitRate: number;
}

/** An Opus track: the fields of the encoder's OpusHead that `dOps` carries. */
export interface OpusConfig {
  codec: "opus";
  channels: number;
  /** Samples (48 kHz) the decoder drops at the start: the encoder's delay. */
  preSkip: number;
  /** The rate the encoder was given (informative). */
  inputRate: number;
}

export type AudioConfig = AacConfig | OpusConfig;

/** The audio track's timescale: the AAC rate, or 48 kHz for Opus. */
export function audioTimescale(a: AudioConfig): number {
  return a.codec === "opus" ? OPUS_RATE : a.sampleRate;
}

/**
 * The audio track's part of a `codecs=` parameter (RFC 6381, and the WebCodecs codec
 * registry's spelling for Opus): `mp4a.40.<object type>` or `opus`.
 */
export function audioCodecString(a: AudioConfig): string {
  if (a.codec === "opus") return "opus";
  let aot = a.asc[0] >> 3;
  if (aot === 31) aot = 32 + (((a.asc[0] & 7) << 3) | (a.asc[1] >> 5));
  return `mp4a.40.${aot}`;
}

export function avc1(v: VideoConfig): Uint8Array {
  return box(
    "avc1",
    zeros(6),
    u16be(1), // data reference index
    zeros(16),
    u16be(v.width),
    u16be(v.height),
    u32be(0x00480000), // 72 dpi
    u32be(0x00480000),
    zeros(4),
    u16be(1), // frame count
    zeros(32), // compressor name
    u16be(0x18), // depth
    u16be(0xffff),
    box("avcC", v.avcC),
  );
}

/** An MPEG-4 descriptor with a 4-byte length (as ffmpeg writes them). */
function descriptor(tag: number, ...parts: Uint8Array[]): Uint8Array {
  const body = concat(parts);
  const n = body.length;
  return concat([
    new Uint8Array([
      tag,
      0x80 | ((n >> 21) & 0x7f),
      0x80 | ((n >> 14) & 0x7f),
      0x80 | ((n >> 7) & 0x7f),
      n & 0x7f,
    ]),
    body,
  ]);
}

/** The AudioSampleEntry fields before its child boxes (28 bytes). */
function audioEntryFields(channels: number, rate: number): Uint8Array {
  return concat([
    zeros(6),
    u16be(1), // data reference index
    zeros(8),
    u16be(channels),
    u16be(16), // sample size
    zeros(4),
    // 16.16 fixed point: a rate past 65535 Hz is written 0 (the ASC carries it).
    u32be(rate <= 0xffff ? rate * 0x10000 : 0),
  ]);
}

function mp4a(a: AacConfig): Uint8Array {
  const esds = fullBox(
    "esds",
    0,
    0,
    descriptor(
      0x03,
      u16be(AUDIO_TRACK_ID),
      new Uint8Array([0]),
      descriptor(
        0x04,
        new Uint8Array([0x40, 0x15, 0, 0, 0]), // MPEG-4 audio, audio stream, buffer size
        u32be(a.bitRate), // max
        u32be(a.bitRate), // average
        descriptor(0x05, a.asc),
      ),
      descriptor(0x06, new Uint8Array([0x02])),
    ),
  );
  return box("mp4a", audioEntryFields(a.channels, a.sampleRate), esds);
}

/**
 * `Opus` with its OpusSpecificBox: version 0, the output channel count, the pre-skip,
 * the input rate, no output gain and channel mapping family 0 (mono or stereo, no
 * mapping table). Big-endian, unlike the OpusHead it comes from.
 */
function opus(a: OpusConfig): Uint8Array {
  const dOps = box(
    "dOps",
    new Uint8Array([0, a.channels]),
    u16be(a.preSkip),
    u32be(a.inputRate),
    u16be(0), // output gain
    new Uint8Array([0]), // channel mapping family
  );
  return box("Opus", audioEntryFields(a.channels, OPUS_RATE), dOps);
}

/** The audio track's sample entry. */
export function audioEntry(a: AudioConfig): Uint8Array {
  return a.codec === "opus" ? opus(a) : mp4a(a);
}
