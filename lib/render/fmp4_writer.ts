/**
 * Writes the fragmented MP4 the socket carries (DECISIONS 6): an init segment
 * (ftyp+moov with mvex) for one H.264 and one AAC or Opus track (the sample entries:
 * ./mp4_entries.ts), and media segments (moof+mdat,
 * `tfhd` default-base-is-moof, `tfdt` version 1) holding one video frame and the audio
 * frames that came out of the encoder with it. The service muxes itself (./muxer.ts) so
 * a fragment leaves the moment its frame is coded, instead of when ffmpeg's MP4 muxer
 * sees the next one.
 */
import {
  box,
  concat,
  fullBox,
  u16be,
  u32be,
  u64be,
  zeros,
} from "./mp4_boxes.ts";
import {
  AUDIO_TRACK_ID,
  type AudioConfig,
  audioEntry,
  audioTimescale,
  avc1,
  type VideoConfig,
} from "./mp4_entries.ts";

export {
  type AacConfig,
  AUDIO_TRACK_ID,
  audioCodecString,
  type AudioConfig,
  type OpusConfig,
  type VideoConfig,
} from "./mp4_entries.ts";

/** Track ids in every stream the service writes. */
export const VIDEO_TRACK_ID = 1;

/** trex default sample flags: a video frame depends on others; audio frames are sync. */
const VIDEO_DELTA_FLAGS = 0x01010000;
const VIDEO_KEY_FLAGS = 0x02000000;
const AUDIO_FLAGS = 0x02000000;

const ascii = new TextEncoder();

/** The unity matrix of mvhd and tkhd. */
const MATRIX = concat(
  [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000].map(u32be),
);

function emptySampleTables(): Uint8Array[] {
  return [
    fullBox("stts", 0, 0, u32be(0)),
    fullBox("stsc", 0, 0, u32be(0)),
    fullBox("stsz", 0, 0, u32be(0), u32be(0)),
    fullBox("stco", 0, 0, u32be(0)),
  ];
}

function trak(
  id: number,
  handler: "vide" | "soun",
  timescale: number,
  header: Uint8Array,
  entry: Uint8Array,
  width = 0,
  height = 0,
): Uint8Array {
  const tkhd = fullBox(
    "tkhd",
    0,
    3,
    zeros(8), // creation, modification
    u32be(id),
    zeros(4),
    u32be(0), // duration
    zeros(8),
    u16be(0), // layer
    u16be(0), // alternate group
    u16be(handler === "soun" ? 0x0100 : 0), // volume
    zeros(2),
    MATRIX,
    u32be(width * 0x10000),
    u32be(height * 0x10000),
  );
  const mdhd = fullBox(
    "mdhd",
    0,
    0,
    zeros(8),
    u32be(timescale),
    u32be(0),
    u16be(0x55c4), // "und"
    zeros(2),
  );
  const name = handler === "vide" ? "VideoHandler" : "SoundHandler";
  const hdlr = fullBox(
    "hdlr",
    0,
    0,
    zeros(4),
    ascii.encode(handler),
    zeros(12),
    ascii.encode(name),
    zeros(1),
  );
  const dinf = box(
    "dinf",
    fullBox("dref", 0, 0, u32be(1), fullBox("url ", 0, 1)),
  );
  const stbl = box(
    "stbl",
    fullBox("stsd", 0, 0, u32be(1), entry),
    ...emptySampleTables(),
  );
  return box(
    "trak",
    tkhd,
    box("mdia", mdhd, hdlr, box("minf", header, dinf, stbl)),
  );
}

function trex(id: number, flags: number): Uint8Array {
  return fullBox(
    "trex",
    0,
    0,
    u32be(id),
    u32be(1),
    u32be(0),
    u32be(0),
    u32be(flags),
  );
}

/** ftyp+moov(mvex) for one H.264 track (id 1) and one AAC or Opus track (id 2). */
export function initSegment(v: VideoConfig, a: AudioConfig): Uint8Array {
  const ftyp = box(
    "ftyp",
    ascii.encode("iso5"),
    u32be(0x200),
    ascii.encode("iso5iso6mp41"),
  );
  const mvhd = fullBox(
    "mvhd",
    0,
    0,
    zeros(8),
    u32be(1000),
    u32be(0),
    u32be(0x10000), // rate
    u16be(0x0100), // volume
    zeros(10),
    MATRIX,
    zeros(24),
    u32be(AUDIO_TRACK_ID + 1),
  );
  const moov = box(
    "moov",
    mvhd,
    trak(
      VIDEO_TRACK_ID,
      "vide",
      v.timescale,
      fullBox("vmhd", 0, 1, zeros(8)),
      avc1(v),
      v.width,
      v.height,
    ),
    trak(
      AUDIO_TRACK_ID,
      "soun",
      audioTimescale(a),
      fullBox("smhd", 0, 0, zeros(4)),
      audioEntry(a),
    ),
    box(
      "mvex",
      trex(VIDEO_TRACK_ID, VIDEO_DELTA_FLAGS),
      trex(AUDIO_TRACK_ID, AUDIO_FLAGS),
    ),
  );
  return concat([ftyp, moov]);
}

/** One coded sample of a fragment. */
export interface Sample {
  data: Uint8Array;
  /** Duration in its track's timescale. */
  duration: number;
}

export interface FragmentContent {
  sequence: number;
  /** The video frame, its decode time (video timescale) and whether it is a keyframe. */
  video: (Sample & { time: number; key: boolean }) | null;
  /** Consecutive audio frames from `audioTime` (audio timescale). */
  audio: Sample[];
  audioTime: number;
}

/** A traf with one trun; `dataOffsetAt` is where its data offset goes in the traf. */
function traf(
  trackId: number,
  time: number,
  samples: Sample[],
  flags: number[] | null,
): { bytes: Uint8Array; dataOffsetAt: number } {
  const trunFlags = 0x1 | 0x100 | 0x200 | (flags ? 0x400 : 0);
  const entries = samples.map((s, i) =>
    concat([
      u32be(s.duration),
      u32be(s.data.length),
      ...(flags ? [u32be(flags[i])] : []),
    ])
  );
  const tfhd = fullBox("tfhd", 0, 0x020000, u32be(trackId));
  const tfdt = fullBox("tfdt", 1, 0, u64be(time));
  const trun = fullBox(
    "trun",
    0,
    trunFlags,
    u32be(samples.length),
    u32be(0), // data offset, patched
    ...entries,
  );
  const bytes = box("traf", tfhd, tfdt, trun);
  // traf header 8 + tfhd + tfdt + trun header 8 + version/flags 4 + count 4.
  return { bytes, dataOffsetAt: 8 + tfhd.length + tfdt.length + 16 };
}

/** moof+mdat for `c`: video first, then audio, in one mdat. */
export function mediaFragment(c: FragmentContent): Uint8Array {
  const trafs: { bytes: Uint8Array; dataOffsetAt: number; size: number }[] = [];
  if (c.video) {
    const flags = [c.video.key ? VIDEO_KEY_FLAGS : VIDEO_DELTA_FLAGS];
    trafs.push({
      ...traf(VIDEO_TRACK_ID, c.video.time, [c.video], flags),
      size: c.video.data.length,
    });
  }
  if (c.audio.length > 0) {
    trafs.push({
      ...traf(AUDIO_TRACK_ID, c.audioTime, c.audio, null),
      size: c.audio.reduce((n, s) => n + s.data.length, 0),
    });
  }
  const mfhd = fullBox("mfhd", 0, 0, u32be(c.sequence));
  const moof = box("moof", mfhd, ...trafs.map((t) => t.bytes));
  const view = new DataView(moof.buffer, moof.byteOffset, moof.byteLength);
  // Each trun's data offset counts from the moof's first byte (default-base-is-moof).
  let at = 8 + mfhd.length;
  let data = moof.length + 8;
  for (const t of trafs) {
    view.setUint32(at + t.dataOffsetAt, data);
    at += t.bytes.length;
    data += t.size;
  }
  const payload = [
    ...(c.video ? [c.video.data] : []),
    ...c.audio.map((s) => s.data),
  ];
  return concat([moof, box("mdat", ...payload)]);
}
