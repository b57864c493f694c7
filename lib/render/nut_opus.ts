/**
 * Reader for the Opus output of the fMP4 encoder's ffmpeg (./encoder.ts with `audio:
 * "opus"`): one Opus stream in NUT on a unix socket. NUT, not Ogg: ffmpeg's Ogg muxer
 * keeps the last finished page until another one is finished (oggenc.c
 * `ogg_write_pages`: a stream's page leaves only once it has two), so every packet
 * waited for the next, 20 ms; NUT writes each packet the moment it is coded, with a
 * frame header that says how long it is, so a packet is handed on when its last byte
 * arrives. Everything here is what libavformat's NUT muxer writes (nutenc.c, format
 * version 3): startcode packets (main, stream, info, syncpoint, index headers) checked
 * against their CRC, and frames decoded through the main header's frame-code table.
 * Anything else throws (the encoder treats that as a failure).
 */

/** The Opus stream's parameters, from its identification header (RFC 7845 §5.1). */
export interface OpusHead {
  channels: number;
  /** Samples (at 48 kHz) the decoder drops at the start: the encoder's delay. */
  preSkip: number;
  /** The rate of the encoder's input (informative). */
  inputRate: number;
  /** Q7.8 dB. */
  outputGain: number;
  mappingFamily: number;
}

/** Reads an OpusHead packet (mapping family 0: mono or stereo). Throws on others. */
export function parseOpusHead(b: Uint8Array): OpusHead {
  const magic = new TextDecoder("latin1").decode(b.subarray(0, 8));
  if (b.length < 19 || magic !== "OpusHead") {
    throw new Error("Opus stream without OpusHead");
  }
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const head = {
    channels: b[9],
    preSkip: v.getUint16(10, true),
    inputRate: v.getUint32(12, true),
    outputGain: v.getInt16(16, true),
    mappingFamily: b[18],
  };
  if (
    b[8] >> 4 !== 0 || head.mappingFamily !== 0 || head.channels < 1 ||
    head.channels > 2
  ) {
    throw new Error("unsupported OpusHead");
  }
  return head;
}

/** Frame length (48 kHz samples) of each TOC configuration (RFC 6716 §3.1). */
const CONFIG_SAMPLES = [
  ...Array(3).fill([480, 960, 1920, 2880]).flat(), // SILK: NB, MB, WB
  ...Array(2).fill([480, 960]).flat(), // hybrid: SWB, FB
  ...Array(4).fill([120, 240, 480, 960]).flat(), // CELT: NB, WB, SWB, FB
];

/** The 48 kHz samples an Opus packet decodes to (from its TOC byte), 0 if malformed. */
export function opusPacketSamples(packet: Uint8Array): number {
  if (packet.length === 0) return 0;
  const frame = CONFIG_SAMPLES[packet[0] >> 3];
  const code = packet[0] & 3;
  if (code === 0) return frame;
  if (code !== 3) return 2 * frame;
  return packet.length < 2 ? 0 : (packet[1] & 0x3f) * frame;
}

const ID_STRING = "nut/multimedia container\0";
/** Startcodes: "N" + a letter, then 48 fixed bits (nut.h). */
const MAIN = 0x4e4d7a561f5f04adn;
const STREAM = 0x4e5311405bf2f9dbn;
const SYNCPOINT = 0x4e4be4adeeca4569n;
const INDEX = 0x4e58dd672f23e64en;
const INFO = 0x4e49ab68b596ba78n;
const STARTCODES = new Set([MAIN, STREAM, SYNCPOINT, INDEX, INFO]);

/** Frame flags (nut.h). */
const FLAG_CODED_PTS = 8;
const FLAG_STREAM_ID = 16;
const FLAG_SIZE_MSB = 32;
const FLAG_CHECKSUM = 64;
const FLAG_RESERVED = 128;
const FLAG_SM_DATA = 256;
const FLAG_HEADER_IDX = 1024;
const FLAG_MATCH_TIME = 2048;
const FLAG_CODED = 4096;
const FLAG_INVALID = 8192;

/** Longest startcode packet or frame accepted (an Opus packet is at most ~7.7 kB). */
const MAX_UNIT_BYTES = 64 * 1024;

/** One entry of the main header's frame-code table. */
interface FrameCode {
  flags: number;
  streamId: number;
  sizeMul: number;
  sizeLsb: number;
  reserved: number;
  headerIdx: number;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) {
      c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
    }
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32, polynomial 0x04C11DB7, MSB first, initial 0: NUT's (and Ogg's) checksum. */
export function crc32Mpeg(b: Uint8Array): number {
  let c = 0;
  for (const x of b) c = ((c << 8) ^ CRC_TABLE[(c >>> 24) ^ x]) >>> 0;
  return c;
}

/** Thrown by `Cursor` reads past the bytes there are: wait for more. */
const MORE = Symbol("more");

class Cursor {
  at = 0;
  constructor(readonly b: Uint8Array, readonly limit = b.length) {}

  need(n: number): void {
    if (this.at + n > this.limit) throw MORE;
  }

  u8(): number {
    this.need(1);
    return this.b[this.at++];
  }

  u32(): number {
    this.need(4);
    const v = new DataView(this.b.buffer, this.b.byteOffset + this.at, 4);
    this.at += 4;
    return v.getUint32(0);
  }

  bytes(n: number): Uint8Array {
    this.need(n);
    this.at += n;
    return this.b.subarray(this.at - n, this.at);
  }

  /** NUT's variable-length unsigned integer: 7 bits a byte, high bit "more". */
  v(): number {
    let value = 0;
    for (let i = 0; i < 8; i++) {
      const x = this.u8();
      value = value * 128 + (x & 0x7f);
      if (!(x & 0x80)) return value;
    }
    throw new Error("NUT number too long");
  }

  /** NUT's signed variant. */
  s(): number {
    const v = this.v() + 1;
    return v % 2 ? -(v - 1) / 2 : v / 2;
  }
}

export interface NutOpusEvents {
  /** The stream's OpusHead, once, before its first packet. */
  onHead(head: OpusHead): void;
  onPacket(packet: Uint8Array): void;
}

/** Splits ffmpeg's NUT output (one Opus stream) into the OpusHead and Opus packets. */
export class NutOpusReader {
  #buf = new Uint8Array(0);
  #idSeen = false;
  #codes: FrameCode[] | null = null;
  #elision: Uint8Array[] = [new Uint8Array(0)];
  #head: OpusHead | null = null;

  constructor(private readonly events: NutOpusEvents) {}

  push(chunk: Uint8Array): void {
    const next = new Uint8Array(this.#buf.length + chunk.length);
    next.set(this.#buf);
    next.set(chunk, this.#buf.length);
    this.#buf = next;
    while (this.#buf.length > 0) {
      const c = new Cursor(this.#buf);
      try {
        this.#unit(c);
      } catch (err) {
        if (err !== MORE) throw err;
        if (this.#buf.length > MAX_UNIT_BYTES + 64) {
          throw new Error("NUT unit too large");
        }
        return;
      }
      this.#buf = this.#buf.subarray(c.at);
    }
  }

  /** Reads one whole unit (the id string, a startcode packet or a frame) or throws. */
  #unit(c: Cursor): void {
    if (!this.#idSeen) {
      const id = new TextDecoder("latin1").decode(c.bytes(ID_STRING.length));
      if (id !== ID_STRING) throw new Error("encoder audio output is not NUT");
      this.#idSeen = true;
      return;
    }
    if (c.b[0] === 0x4e) this.#packet(c);
    else this.#frame(c);
  }

  #packet(c: Cursor): void {
    const start = c.bytes(8);
    const code = new DataView(start.buffer, start.byteOffset).getBigUint64(0);
    if (!STARTCODES.has(code)) throw new Error("unknown NUT startcode");
    const size = c.v();
    if (size < 4 || size > MAX_UNIT_BYTES) {
      throw new Error("bad NUT packet size");
    }
    if (size > 4096) {
      const header = c.b.subarray(0, c.at);
      if (c.u32() !== crc32Mpeg(header)) throw new Error("NUT header checksum");
    }
    const body = c.bytes(size - 4);
    if (c.u32() !== crc32Mpeg(body)) throw new Error("NUT packet checksum");
    if (code === MAIN) this.#main(new Cursor(body));
    else if (code === STREAM) this.#stream(new Cursor(body));
    // Info, syncpoints and the index carry nothing the muxer needs.
  }

  /** The main header: one stream, the frame-code table and the elision headers. */
  #main(c: Cursor): void {
    const fail = (): never => {
      throw new Error("unexpected NUT main header");
    };
    try {
      const version = c.v();
      if (version !== 3) fail();
      if (c.v() !== 1) fail(); // stream count
      c.v(); // max distance
      const timeBases = c.v();
      for (let i = 0; i < timeBases; i++) (c.v(), c.v());
      const codes: FrameCode[] = [];
      let mul = 1, stream = 0, headerIdx = 0;
      while (codes.length < 256) {
        const flags = c.v();
        const fields = c.v();
        if (fields > 0) c.s(); // pts delta
        if (fields > 1) mul = c.v();
        if (fields > 2) stream = c.v();
        const size = fields > 3 ? c.v() : 0;
        const reserved = fields > 4 ? c.v() : 0;
        const count = fields > 5 ? c.v() : mul - size;
        if (fields > 6) c.s(); // match time delta
        if (fields > 7) headerIdx = c.v();
        for (let i = 8; i < fields; i++) c.v();
        if (count <= 0 || count > 256 - codes.length || stream !== 0) fail();
        for (let j = 0; j < count; j++) {
          // Code "N" starts a startcode, never a frame.
          if (codes.length === 0x4e) codes.push(invalidCode());
          if (codes.length === 256) fail();
          codes.push({
            flags,
            streamId: stream,
            sizeMul: mul,
            sizeLsb: size + j,
            reserved,
            headerIdx,
          });
        }
      }
      if (codes[0x4e].flags !== FLAG_INVALID) fail();
      const elision = [new Uint8Array(0)];
      if (c.at < c.limit) {
        const count = c.v() + 1;
        for (let i = 1; i < count; i++) {
          const n = c.v();
          if (n === 0 || n > 255) fail();
          elision.push(c.bytes(n).slice());
        }
      }
      this.#codes = codes;
      this.#elision = elision;
    } catch (err) {
      if (err === MORE) fail();
      throw err;
    }
  }

  /** The stream header: an Opus audio stream; its codec data is the OpusHead. */
  #stream(c: Cursor): void {
    try {
      if (c.v() !== 0 || c.v() !== 1) {
        throw new Error("NUT stream is not audio");
      }
      const fourcc = new TextDecoder("latin1").decode(c.bytes(c.v()));
      if (fourcc !== "Opus") throw new Error("NUT stream is not Opus");
      for (let i = 0; i < 5; i++) c.v(); // time base, pts shift, distance, delay, flags
      const head = parseOpusHead(c.bytes(c.v()));
      if (!this.#head) {
        this.#head = head;
        this.events.onHead(head);
      }
    } catch (err) {
      if (err === MORE) throw new Error("truncated NUT stream header");
      throw err;
    }
  }

  #frame(c: Cursor): void {
    if (!this.#codes || !this.#head) {
      throw new Error("NUT frame before headers");
    }
    const fc = this.#codes[c.u8()];
    let flags = fc.flags;
    if (flags & FLAG_INVALID) throw new Error("invalid NUT frame code");
    if (flags & FLAG_CODED) flags ^= c.v();
    const stream = flags & FLAG_STREAM_ID ? c.v() : fc.streamId;
    if (stream !== 0) throw new Error("NUT frame of an unknown stream");
    if (flags & FLAG_CODED_PTS) c.v();
    let size = fc.sizeLsb;
    if (flags & FLAG_SIZE_MSB) size += fc.sizeMul * c.v();
    if (flags & FLAG_MATCH_TIME) c.s();
    let headerIdx = flags & FLAG_HEADER_IDX ? c.v() : fc.headerIdx;
    const reserved = flags & FLAG_RESERVED ? c.v() : fc.reserved;
    for (let i = 0; i < reserved; i++) c.v();
    if (headerIdx >= this.#elision.length) {
      throw new Error("bad NUT header index");
    }
    if (size > 4096) headerIdx = 0;
    const elided = this.#elision[headerIdx];
    size -= elided.length;
    if (size < 0 || size > MAX_UNIT_BYTES) {
      throw new Error("bad NUT frame size");
    }
    if (flags & FLAG_CHECKSUM) {
      const header = c.b.subarray(0, c.at);
      if (c.u32() !== crc32Mpeg(header)) throw new Error("NUT frame checksum");
    }
    if (flags & FLAG_SM_DATA) throw new Error("NUT frame with side data");
    const data = c.bytes(size);
    const packet = new Uint8Array(elided.length + size);
    packet.set(elided);
    packet.set(data, elided.length);
    this.events.onPacket(packet);
  }
}

function invalidCode(): FrameCode {
  return {
    flags: FLAG_INVALID,
    streamId: 0,
    sizeMul: 1,
    sizeLsb: 0,
    reserved: 0,
    headerIdx: 0,
  };
}
