/**
 * Parsers for what MediaSource needs from fragmented-MP4 segments: from an init segment
 * the tracks, their codecs string and mvex; from a media segment the tfhd flags, tfdt
 * and whether it starts on a keyframe.
 */
import {
  type Box,
  boxType,
  child,
  children,
  parseBoxes,
  path,
  u32,
  u64,
} from "./mp4_boxes.ts";
import { esdsConfig } from "../../client/webcodecs/fmp4.ts";

export interface InitTrack {
  trackId: number;
  kind: "video" | "audio" | "other";
  timescale: number;
  /** RFC 6381 codec of the track, e.g. `avc1.42c01e`, `mp4a.40.2` or `opus`. */
  codec: string;
  /** trex default sample flags (used when a fragment gives none). */
  defaultSampleFlags: number;
}

export interface InitInfo {
  hasMvex: boolean;
  tracks: InitTrack[];
  /** `video/mp4; codecs="…"` naming every track. */
  mime: string;
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, "0");
}

function avcCodec(b: Uint8Array, entry: Box): string {
  // VisualSampleEntry: 78 bytes of fixed fields precede the child boxes.
  const avcC = child(b, entry, "avcC", 78);
  if (!avcC) throw new Error("avc1 entry without avcC");
  const p = avcC.bodyStart;
  return `avc1.${hex2(b[p + 1])}${hex2(b[p + 2])}${hex2(b[p + 3])}`;
}

function mp4aCodec(b: Uint8Array, entry: Box): string {
  // AudioSampleEntry: 28 bytes of fixed fields precede the child boxes.
  const esds = child(b, entry, "esds", 28);
  if (!esds) throw new Error("mp4a entry without esds");
  const { oti, asc } = esdsConfig(b, esds.bodyStart);
  if (!asc) return `mp4a.${hex2(oti)}`;
  let aot = asc[0] >> 3;
  if (aot === 31) aot = 32 + (((asc[0] & 7) << 3) | (asc[1] >> 5));
  return `mp4a.${hex2(oti)}.${aot}`;
}

/**
 * `opus`, as the WebCodecs codec registry and MediaSource name Opus in MP4 (the entry
 * is spelled `Opus`); an entry without its `dOps` is refused.
 */
function opusCodec(b: Uint8Array, entry: Box): string {
  // AudioSampleEntry: 28 bytes of fixed fields precede the child boxes.
  if (!child(b, entry, "dOps", 28)) throw new Error("Opus entry without dOps");
  return "opus";
}

/** Parses an init segment: tracks, codecs and the MIME type for `addSourceBuffer`. */
export function parseInit(init: Uint8Array): InitInfo {
  const top = parseBoxes(init);
  const moov = top.find((x) => x.type === "moov");
  if (!moov) throw new Error("init segment without moov");
  const mvex = child(init, moov, "mvex");
  const trexFlags = new Map<number, number>();
  if (mvex) {
    for (const trex of children(init, mvex, "trex")) {
      trexFlags.set(
        u32(init, trex.bodyStart + 4),
        u32(init, trex.bodyStart + 20),
      );
    }
  }
  const tracks: InitTrack[] = [];
  for (const trak of children(init, moov, "trak")) {
    const tkhd = child(init, trak, "tkhd");
    const mdhd = path(init, trak, ["mdia", "mdhd"]);
    const hdlr = path(init, trak, ["mdia", "hdlr"]);
    const stsd = path(init, trak, ["mdia", "minf", "stbl", "stsd"]);
    if (!tkhd || !mdhd || !hdlr || !stsd) throw new Error("incomplete trak");
    const tkv = init[tkhd.bodyStart];
    const trackId = u32(init, tkhd.bodyStart + (tkv === 1 ? 20 : 12));
    const mdv = init[mdhd.bodyStart];
    const timescale = u32(init, mdhd.bodyStart + (mdv === 1 ? 20 : 12));
    const handler = boxType(init, hdlr.bodyStart + 8);
    const entry = parseBoxes(init, stsd.bodyStart + 8, stsd.end)[0];
    if (!entry) throw new Error("stsd without entries");
    let codec = entry.type;
    if (entry.type === "avc1" || entry.type === "avc3") {
      codec = avcCodec(init, entry);
    } else if (entry.type === "mp4a") codec = mp4aCodec(init, entry);
    else if (entry.type === "Opus") codec = opusCodec(init, entry);
    tracks.push({
      trackId,
      kind: handler === "vide"
        ? "video"
        : handler === "soun"
        ? "audio"
        : "other",
      timescale,
      codec,
      defaultSampleFlags: trexFlags.get(trackId) ?? 0,
    });
  }
  const codecs = tracks.map((t) => t.codec).join(", ");
  return { hasMvex: !!mvex, tracks, mime: `video/mp4; codecs="${codecs}"` };
}

export interface FragmentTrack {
  trackId: number;
  /** tfhd flags as written. */
  tfhdFlags: number;
  defaultBaseIsMoof: boolean;
  hasBaseDataOffset: boolean;
  baseDecodeTime: number;
  sampleCount: number;
  /** Sum of the sample durations, in the track's timescale. */
  duration: number;
  /** Whether the first sample is a sync sample (keyframe). */
  firstSampleSync: boolean;
}

export interface FragmentInfo {
  sequence: number;
  tracks: FragmentTrack[];
}

/**
 * Parses a media segment (moof+mdat). `defaults` gives trex default sample flags by
 * track id for fragments that carry no flags of their own.
 */
export function parseFragment(
  seg: Uint8Array,
  defaults: Map<number, number> = new Map(),
): FragmentInfo {
  const top = parseBoxes(seg);
  const moof = top.find((x) => x.type === "moof");
  if (!moof || !top.some((x) => x.type === "mdat")) {
    throw new Error("segment is not moof+mdat");
  }
  const mfhd = child(seg, moof, "mfhd");
  const sequence = mfhd ? u32(seg, mfhd.bodyStart + 4) : 0;
  const tracks: FragmentTrack[] = [];
  for (const traf of children(seg, moof, "traf")) {
    const tfhd = child(seg, traf, "tfhd");
    if (!tfhd) throw new Error("traf without tfhd");
    const tfhdFlags = u32(seg, tfhd.bodyStart) & 0xffffff;
    const trackId = u32(seg, tfhd.bodyStart + 4);
    let at = tfhd.bodyStart + 8;
    if (tfhdFlags & 0x1) at += 8;
    if (tfhdFlags & 0x2) at += 4;
    let defDuration = 0;
    if (tfhdFlags & 0x8) {
      defDuration = u32(seg, at);
      at += 4;
    }
    if (tfhdFlags & 0x10) at += 4;
    let defFlags = defaults.get(trackId) ?? 0;
    if (tfhdFlags & 0x20) defFlags = u32(seg, at);
    const tfdt = child(seg, traf, "tfdt");
    let baseDecodeTime = 0;
    if (tfdt) {
      baseDecodeTime = seg[tfdt.bodyStart] === 1
        ? u64(seg, tfdt.bodyStart + 4)
        : u32(seg, tfdt.bodyStart + 4);
    }
    let sampleCount = 0;
    let duration = 0;
    let firstFlags: number | undefined;
    for (const trun of children(seg, traf, "trun")) {
      const flags = u32(seg, trun.bodyStart) & 0xffffff;
      const count = u32(seg, trun.bodyStart + 4);
      let p = trun.bodyStart + 8;
      if (flags & 0x1) p += 4;
      let firstSampleFlags: number | undefined;
      if (flags & 0x4) {
        firstSampleFlags = u32(seg, p);
        p += 4;
      }
      for (let i = 0; i < count; i++) {
        let d = defDuration;
        let f = i === 0 && firstSampleFlags !== undefined
          ? firstSampleFlags
          : defFlags;
        if (flags & 0x100) (d = u32(seg, p), p += 4);
        if (flags & 0x200) p += 4;
        if (flags & 0x400) (f = u32(seg, p), p += 4);
        if (flags & 0x800) p += 4;
        if (firstFlags === undefined) firstFlags = f;
        duration += d;
      }
      sampleCount += count;
    }
    tracks.push({
      trackId,
      tfhdFlags,
      defaultBaseIsMoof: (tfhdFlags & 0x20000) !== 0,
      hasBaseDataOffset: (tfhdFlags & 0x1) !== 0,
      baseDecodeTime,
      sampleCount,
      duration,
      firstSampleSync: firstFlags !== undefined &&
        ((firstFlags >> 16) & 1) === 0,
    });
  }
  return { sequence, tracks };
}
