/**
 * A demuxer for the fragmented MP4 the media socket carries (DECISIONS 6), for WebCodecs:
 * from the init segment (ftyp+moov) each track's decoder configuration (H.264: the
 * `avcC` record and its codec string; AAC: the AudioSpecificConfig of `esds`, its rate
 * and channels; Opus: ./opus.ts) and the edit list's start offset; from each media segment (moof+mdat)
 * the samples of every track with their bytes, decode and presentation times
 * (`tfdt` + `trun` durations and composition offsets), durations and keyframe flags.
 */

import { opusConfig } from "./opus.ts";

/** One track of the init segment, ready for `VideoDecoder` / `AudioDecoder.configure`. */
export interface Fmp4Track {
  trackId: number;
  kind: "video" | "audio";
  timescale: number;
  /** RFC 6381 codec, e.g. `avc1.42c01e`, `mp4a.40.2`, `opus`. */
  codec: string;
  /** The decoder's `description`: the avcC record, AudioSpecificConfig or OpusHead. */
  description: Uint8Array;
  /** Video: coded size from the sample entry. */
  width: number;
  height: number;
  /** Audio: sample rate and channel count (from the AudioSpecificConfig). */
  sampleRate: number;
  channels: number;
  /**
   * The edit list's media start (e.g. AAC priming), else Opus's pre-skip, in the
   * track's timescale.
   */
  startOffset: number;
  /** trex defaults: sample duration, size and flags. */
  defaults: { duration: number; size: number; flags: number };
}

/** One sample of a media segment. */
export interface Fmp4Sample {
  trackId: number;
  /** Presentation time, microseconds (edit list applied). */
  ptsUs: number;
  durationUs: number;
  key: boolean;
  data: Uint8Array;
}

interface Box {
  type: string;
  start: number;
  body: number;
  end: number;
}

function u32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) >>> 0) + (b[at + 1] << 16) + (b[at + 2] << 8) +
    b[at + 3];
}

function u16(b: Uint8Array, at: number): number {
  return (b[at] << 8) | b[at + 1];
}

function u64(b: Uint8Array, at: number): number {
  return u32(b, at) * 2 ** 32 + u32(b, at + 4);
}

function boxes(b: Uint8Array, from = 0, to = b.length): Box[] {
  const out: Box[] = [];
  let at = from;
  while (at + 8 <= to) {
    let size = u32(b, at);
    let body = at + 8;
    if (size === 1) {
      size = u64(b, at + 8);
      body = at + 16;
    } else if (size === 0) size = to - at;
    if (size < body - at || at + size > to) throw new Error("bad mp4 box size");
    const type = String.fromCharCode(
      b[at + 4],
      b[at + 5],
      b[at + 6],
      b[at + 7],
    );
    out.push({ type, start: at, body, end: at + size });
    at += size;
  }
  return out;
}

function find(
  b: Uint8Array,
  parent: Box,
  path: string[],
  skip = 0,
): Box | null {
  let box: Box | null = parent;
  for (const [i, type] of path.entries()) {
    const from: number = box.body + (i === 0 ? skip : 0);
    box = boxes(b, from, box.end).find((x) => x.type === type) ?? null;
    if (!box) return null;
  }
  return box;
}

function all(b: Uint8Array, parent: Box, type: string): Box[] {
  return boxes(b, parent.body, parent.end).filter((x) => x.type === type);
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, "0");
}

/** An MPEG-4 descriptor header at `at`: [tag, body start, body end]. */
function descriptor(b: Uint8Array, at: number): [number, number, number] {
  const tag = b[at++];
  let len = 0;
  for (let i = 0; i < 4; i++) {
    const v = b[at++];
    len = (len << 7) | (v & 0x7f);
    if (!(v & 0x80)) break;
  }
  return [tag, at, at + len];
}

/**
 * The decoder configuration in an esds box whose body starts at `body`: the object type
 * indication and the AudioSpecificConfig (null when the esds carries none). Throws when
 * the descriptors are not there.
 */
export function esdsConfig(
  b: Uint8Array,
  body: number,
): { oti: number; asc: Uint8Array | null } {
  let [tag, at] = descriptor(b, body + 4);
  if (tag !== 0x03) throw new Error("esds without ES_Descriptor");
  const flags = b[at + 2];
  at += 3;
  if (flags & 0x80) at += 2;
  if (flags & 0x40) at += 1 + b[at];
  if (flags & 0x20) at += 2;
  [tag, at] = descriptor(b, at);
  if (tag !== 0x04) throw new Error("esds without DecoderConfigDescriptor");
  const oti = b[at];
  const [dsi, start, end] = descriptor(b, at + 13);
  return { oti, asc: dsi === 0x05 ? b.slice(start, end) : null };
}

/** AAC sampling rates by sampling-frequency index. */
export const AAC_RATES = [
  96000,
  88200,
  64000,
  48000,
  44100,
  32000,
  24000,
  22050,
  16000,
  12000,
  11025,
  8000,
  7350,
];

function audioEntry(b: Uint8Array, entry: Box): Partial<Fmp4Track> {
  // AudioSampleEntry: 28 bytes of fixed fields precede the esds box.
  const esds = boxes(b, entry.body + 28, entry.end).find((x) =>
    x.type === "esds"
  );
  if (!esds) throw new Error("mp4a entry without esds");
  const { oti, asc } = esdsConfig(b, esds.body);
  if (!asc) throw new Error("esds without AudioSpecificConfig");
  const aot = asc[0] >> 3;
  const rateIndex = ((asc[0] & 7) << 1) | (asc[1] >> 7);
  return {
    codec: `mp4a.${hex2(oti)}.${aot}`,
    description: asc,
    sampleRate: AAC_RATES[rateIndex] ?? u32(b, entry.body + 24) >>> 16,
    channels: (asc[1] >> 3) & 0xf || u16(b, entry.body + 16),
  };
}

/** An `Opus` sample entry: 48 kHz, its dOps as an OpusHead, its pre-skip. */
function opusEntry(b: Uint8Array, entry: Box): Partial<Fmp4Track> {
  const dOps = boxes(b, entry.body + 28, entry.end).find((x) =>
    x.type === "dOps"
  );
  if (!dOps) throw new Error("Opus entry without dOps");
  const c = opusConfig(b.slice(dOps.body, dOps.end));
  return {
    codec: "opus",
    description: c.head,
    sampleRate: 48000,
    channels: c.channels,
    startOffset: c.preSkip,
  };
}

function videoEntry(b: Uint8Array, entry: Box): Partial<Fmp4Track> {
  // VisualSampleEntry: 78 bytes of fixed fields precede the avcC box.
  const avcC = boxes(b, entry.body + 78, entry.end).find((x) =>
    x.type === "avcC"
  );
  if (!avcC) throw new Error("avc1 entry without avcC");
  const p = avcC.body;
  return {
    codec: `avc1.${hex2(b[p + 1])}${hex2(b[p + 2])}${hex2(b[p + 3])}`,
    description: b.slice(avcC.body, avcC.end),
    width: u16(b, entry.body + 24),
    height: u16(b, entry.body + 26),
  };
}

/** The audio and video tracks of an init segment (other tracks are left out). */
export function parseInitSegment(init: Uint8Array): Fmp4Track[] {
  const moov = boxes(init).find((x) => x.type === "moov");
  if (!moov) throw new Error("init segment without moov");
  const trex = new Map<number, Fmp4Track["defaults"]>();
  const mvex = find(init, moov, ["mvex"]);
  for (const t of mvex ? all(init, mvex, "trex") : []) {
    trex.set(u32(init, t.body + 4), {
      duration: u32(init, t.body + 12),
      size: u32(init, t.body + 16),
      flags: u32(init, t.body + 20),
    });
  }
  const tracks: Fmp4Track[] = [];
  for (const trak of all(init, moov, "trak")) {
    const tkhd = find(init, trak, ["tkhd"]);
    const mdhd = find(init, trak, ["mdia", "mdhd"]);
    const hdlr = find(init, trak, ["mdia", "hdlr"]);
    const stsd = find(init, trak, ["mdia", "minf", "stbl", "stsd"]);
    if (!tkhd || !mdhd || !hdlr || !stsd) throw new Error("incomplete trak");
    const trackId = u32(init, tkhd.body + (init[tkhd.body] === 1 ? 20 : 12));
    const timescale = u32(init, mdhd.body + (init[mdhd.body] === 1 ? 20 : 12));
    const handler = String.fromCharCode(
      ...init.subarray(hdlr.body + 8, hdlr.body + 12),
    );
    const entry = boxes(init, stsd.body + 8, stsd.end)[0];
    if (!entry) throw new Error("stsd without entries");
    let fields: Partial<Fmp4Track>;
    if (
      handler === "vide" && (entry.type === "avc1" || entry.type === "avc3")
    ) {
      fields = videoEntry(init, entry);
    } else if (handler === "soun" && entry.type === "mp4a") {
      fields = audioEntry(init, entry);
    } else if (handler === "soun" && entry.type === "Opus") {
      fields = opusEntry(init, entry);
    } else continue;
    tracks.push({
      trackId,
      kind: handler === "vide" ? "video" : "audio",
      timescale,
      codec: "",
      description: new Uint8Array(0),
      width: 0,
      height: 0,
      sampleRate: 0,
      channels: 0,
      defaults: trex.get(trackId) ?? { duration: 0, size: 0, flags: 0 },
      ...fields,
      // An edit list's start wins over Opus's pre-skip (the same delay, said twice).
      startOffset: editStart(init, trak) || fields.startOffset || 0,
    });
  }
  return tracks;
}

/** The first non-empty edit's media time (how much the track's start is cut). */
function editStart(b: Uint8Array, trak: Box): number {
  const elst = find(b, trak, ["edts", "elst"]);
  if (!elst) return 0;
  const v1 = b[elst.body] === 1;
  const count = u32(b, elst.body + 4);
  let at = elst.body + 8;
  for (let i = 0; i < count; i++) {
    const mediaTime = v1 ? u64(b, at + 8) : u32(b, at + 4);
    const empty = v1 ? u32(b, at + 8) === 0xffffffff : mediaTime === 0xffffffff;
    if (!empty) return mediaTime;
    at += v1 ? 20 : 12;
  }
  return 0;
}

/**
 * The samples of one media segment, per track in decode order. `tracks` are the init
 * segment's; samples of other tracks are skipped.
 */
export function parseMediaSegment(
  seg: Uint8Array,
  tracks: readonly Fmp4Track[],
): Fmp4Sample[] {
  const moof = boxes(seg).find((x) => x.type === "moof");
  if (!moof) throw new Error("segment without moof");
  const out: Fmp4Sample[] = [];
  for (const traf of all(seg, moof, "traf")) {
    const tfhd = find(seg, traf, ["tfhd"]);
    if (!tfhd) throw new Error("traf without tfhd");
    const tf = u32(seg, tfhd.body) & 0xffffff;
    const track = tracks.find((t) => t.trackId === u32(seg, tfhd.body + 4));
    if (!track) continue;
    let at = tfhd.body + 8;
    let base = moof.start;
    if (tf & 0x1) (base = u64(seg, at), at += 8);
    if (tf & 0x2) at += 4;
    let { duration: defDur, size: defSize, flags: defFlags } = track.defaults;
    if (tf & 0x8) (defDur = u32(seg, at), at += 4);
    if (tf & 0x10) (defSize = u32(seg, at), at += 4);
    if (tf & 0x20) defFlags = u32(seg, at);
    const tfdt = find(seg, traf, ["tfdt"]);
    let dts = 0;
    if (tfdt) {
      dts = seg[tfdt.body] === 1
        ? u64(seg, tfdt.body + 4)
        : u32(seg, tfdt.body + 4);
    }
    const scale = 1_000_000 / track.timescale;
    let next = base;
    for (const trun of all(seg, traf, "trun")) {
      const f = u32(seg, trun.body) & 0xffffff;
      const count = u32(seg, trun.body + 4);
      let p = trun.body + 8;
      let data = next;
      if (f & 0x1) (data = base + (u32(seg, p) | 0), p += 4);
      let first: number | undefined;
      if (f & 0x4) (first = u32(seg, p), p += 4);
      for (let i = 0; i < count; i++) {
        let dur = defDur, size = defSize, flags = defFlags, cto = 0;
        if (i === 0 && first !== undefined) flags = first;
        if (f & 0x100) (dur = u32(seg, p), p += 4);
        if (f & 0x200) (size = u32(seg, p), p += 4);
        if (f & 0x400) (flags = u32(seg, p), p += 4);
        if (f & 0x800) (cto = u32(seg, p) | 0, p += 4);
        if (data + size > seg.length) {
          throw new Error("sample past the segment");
        }
        out.push({
          trackId: track.trackId,
          ptsUs: Math.round((dts + cto - track.startOffset) * scale),
          durationUs: Math.round(dur * scale),
          key: ((flags >> 16) & 1) === 0,
          data: seg.subarray(data, data + size),
        });
        data += size;
        dts += dur;
      }
      next = data;
    }
  }
  return out;
}
