/**
 * Fragmented-MP4 boxes: a streaming splitter that turns an encoder's byte stream into
 * the init segment (ftyp+moov) and media segments (moof+mdat), and parsers for what
 * MediaSource needs from them (codecs string, mvex, tfhd flags, tfdt, keyframes).
 */

/** A box's place inside a buffer. `end` is exclusive; the payload starts at `bodyStart`. */
export interface Box {
  type: string;
  start: number;
  bodyStart: number;
  end: number;
}

const latin1 = new TextDecoder("latin1");

function u32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) >>> 0) + (b[at + 1] << 16) + (b[at + 2] << 8) +
    b[at + 3];
}

function u64(b: Uint8Array, at: number): number {
  return u32(b, at) * 2 ** 32 + u32(b, at + 4);
}

function boxType(b: Uint8Array, at: number): string {
  return latin1.decode(b.subarray(at, at + 4));
}

/** Lists the boxes laid end to end in `b[start, end)`. Throws on a truncated box. */
export function parseBoxes(
  b: Uint8Array,
  start = 0,
  end = b.length,
): Box[] {
  const boxes: Box[] = [];
  let at = start;
  while (at + 8 <= end) {
    let size = u32(b, at);
    let header = 8;
    if (size === 1) {
      size = u64(b, at + 8);
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) {
      throw new Error(`truncated ${boxType(b, at + 4)} box`);
    }
    boxes.push({
      type: boxType(b, at + 4),
      start: at,
      bodyStart: at + header,
      end: at + size,
    });
    at += size;
  }
  return boxes;
}

/** The first child of `parent` with `type` (children start `skip` bytes into its body). */
export function child(
  b: Uint8Array,
  parent: Box,
  type: string,
  skip = 0,
): Box | undefined {
  return parseBoxes(b, parent.bodyStart + skip, parent.end).find((c) =>
    c.type === type
  );
}

function children(b: Uint8Array, parent: Box, type: string): Box[] {
  return parseBoxes(b, parent.bodyStart, parent.end).filter((c) =>
    c.type === type
  );
}

function path(b: Uint8Array, root: Box, types: string[]): Box | undefined {
  let cur: Box | undefined = root;
  for (const t of types) {
    if (!cur) return undefined;
    cur = child(b, cur, t);
  }
  return cur;
}

export interface InitTrack {
  trackId: number;
  kind: "video" | "audio" | "other";
  timescale: number;
  /** RFC 6381 codec of the track, e.g. `avc1.42c01e` or `mp4a.40.2`. */
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

/** Reads an MPEG-4 descriptor header; returns [tag, bodyStart, end]. */
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

function mp4aCodec(b: Uint8Array, entry: Box): string {
  // AudioSampleEntry: 28 bytes of fixed fields precede the child boxes.
  const esds = child(b, entry, "esds", 28);
  if (!esds) throw new Error("mp4a entry without esds");
  let [tag, at] = descriptor(b, esds.bodyStart + 4);
  if (tag !== 0x03) throw new Error("esds without ES_Descriptor");
  const flags = b[at + 2];
  at += 3;
  if (flags & 0x80) at += 2;
  if (flags & 0x40) at += 1 + b[at];
  if (flags & 0x20) at += 2;
  [tag, at] = descriptor(b, at);
  if (tag !== 0x04) throw new Error("esds without DecoderConfigDescriptor");
  const oti = b[at];
  [tag, at] = descriptor(b, at + 13);
  if (tag !== 0x05) return `mp4a.${hex2(oti)}`;
  let aot = b[at] >> 3;
  if (aot === 31) aot = 32 + (((b[at] & 7) << 3) | (b[at + 1] >> 5));
  return `mp4a.${hex2(oti)}.${aot}`;
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

export interface SplitterEvents {
  onInit(init: Uint8Array): void;
  onSegment(segment: Uint8Array): void;
}

/**
 * Splits a fragmented-MP4 byte stream into the init segment and media segments as bytes
 * arrive. Holds at most one box (bounded by `maxBoxBytes`, else it throws); other
 * top-level boxes (free, sidx, mfra…) are dropped.
 */
export class BoxSplitter {
  #chunks: Uint8Array[] = [];
  #length = 0;
  #pending: Uint8Array[] = [];
  #pendingType = "";

  constructor(
    private readonly events: SplitterEvents,
    private readonly maxBoxBytes = 8 * 1024 * 1024,
  ) {}

  /** Feeds bytes; emits every complete init segment and segment, in order. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    for (;;) {
      const head = this.#peek(16);
      if (!head) return;
      let size = u32(head, 0);
      if (size === 1) {
        if (head.length < 16) return;
        size = u64(head, 8);
      }
      if (size < 8 || size > this.maxBoxBytes) {
        throw new Error(`unusable ${boxType(head, 4)} box of ${size} bytes`);
      }
      if (this.#length < size) return;
      this.#box(boxType(head, 4), this.#take(size));
    }
  }

  #box(type: string, bytes: Uint8Array): void {
    if (type === "ftyp" || type === "moof") {
      this.#pending = [bytes];
      this.#pendingType = type;
    } else if (type === "moov" && this.#pendingType === "ftyp") {
      this.events.onInit(concat([...this.#pending, bytes]));
      this.#pending = [];
      this.#pendingType = "";
    } else if (type === "mdat" && this.#pendingType === "moof") {
      this.events.onSegment(concat([...this.#pending, bytes]));
      this.#pending = [];
      this.#pendingType = "";
    }
  }

  #peek(n: number): Uint8Array | null {
    if (this.#length < 8) return null;
    const want = Math.min(n, this.#length);
    const first = this.#chunks[0];
    if (first.length >= want) return first.subarray(0, want);
    const out = new Uint8Array(want);
    let got = 0;
    for (const c of this.#chunks) {
      const use = Math.min(c.length, want - got);
      out.set(c.subarray(0, use), got);
      got += use;
      if (got === want) break;
    }
    return out;
  }

  #take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      const c = this.#chunks[0];
      const use = Math.min(c.length, n - got);
      out.set(c.subarray(0, use), got);
      got += use;
      if (use === c.length) this.#chunks.shift();
      else this.#chunks[0] = c.subarray(use);
    }
    this.#length -= n;
    return out;
  }
}

/** Concatenates byte arrays. */
export function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * A copy of media segment `seg` with each track's `tfdt` base decode time lowered by its
 * entry in `offsets` (tracks not named keep theirs) and the `mfhd` sequence number set
 * to `sequence`: how one encoder's fragments start near 0 on each socket that joins it.
 * Throws when a time would go below 0 or the segment has no moof.
 */
export function rebaseFragment(
  seg: Uint8Array,
  offsets: Map<number, number>,
  sequence: number,
): Uint8Array {
  const out = seg.slice();
  const moof = parseBoxes(out).find((x) => x.type === "moof");
  if (!moof) throw new Error("segment without moof");
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const mfhd = child(out, moof, "mfhd");
  if (mfhd) view.setUint32(mfhd.bodyStart + 4, sequence >>> 0);
  for (const traf of children(out, moof, "traf")) {
    const tfhd = child(out, traf, "tfhd");
    const tfdt = child(out, traf, "tfdt");
    if (!tfhd || !tfdt) continue;
    const offset = offsets.get(u32(out, tfhd.bodyStart + 4));
    if (!offset) continue;
    const v1 = out[tfdt.bodyStart] === 1;
    const at = tfdt.bodyStart + 4;
    const time = (v1 ? u64(out, at) : u32(out, at)) - offset;
    if (time < 0) throw new Error("rebased decode time below 0");
    if (v1) {
      view.setUint32(at, Math.floor(time / 2 ** 32));
      view.setUint32(at + 4, time >>> 0);
    } else {
      view.setUint32(at, time);
    }
  }
  return out;
}
