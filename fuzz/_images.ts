/**
 * Hostile portraits built byte by byte, for the upload fuzz cases and the photo tests:
 * PNG chunks (with their CRC), and progressive JPEGs of as many scans as asked.
 */
const enc = new TextEncoder();

export const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function crc32(b: Uint8Array): number {
  let c = ~0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** One PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, data.length);
  out.set(enc.encode(type), 4);
  out.set(data, 8);
  v.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** The IHDR chunk of an 8-bit RGB `side`² image (`interlace` 1: Adam7). */
export function pngIhdr(side: number, interlace = 0): Uint8Array {
  const b = new Uint8Array(13);
  const v = new DataView(b.buffer);
  v.setUint32(0, side);
  v.setUint32(4, side);
  b.set([8, 2, 0, 0, interlace], 8);
  return pngChunk("IHDR", b);
}

/** An IHDR chunk of any fields, allowed by PNG or not: `pngIhdr`'s with `over` changed. */
export function pngIhdrOf(over: {
  width?: number;
  height?: number;
  depth?: number;
  colour?: number;
  compression?: number;
  filter?: number;
  interlace?: number;
}): Uint8Array {
  const f = {
    width: 8,
    height: 8,
    depth: 8,
    colour: 2,
    compression: 0,
    filter: 0,
    interlace: 0,
    ...over,
  };
  const b = new Uint8Array(13);
  const v = new DataView(b.buffer);
  v.setUint32(0, f.width);
  v.setUint32(4, f.height);
  b.set([f.depth, f.colour, f.compression, f.filter, f.interlace], 8);
  return pngChunk("IHDR", b);
}

/** The signature, `chunks` and IEND, as one PNG file. */
export function pngOf(...chunks: Uint8Array[]): Uint8Array {
  const all = [
    new Uint8Array(PNG_SIGNATURE),
    ...chunks,
    pngChunk("IEND", new Uint8Array()),
  ];
  return concat(all);
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of parts) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * A progressive greyscale JPEG, `side`² px, all mid-grey: a DC scan, then `acScans`
 * AC scans of a few bytes each (one EOB run of 32,767 blocks per 15 bits).
 */
export function progressiveJpeg(side: number, acScans: number): Uint8Array {
  const out: number[] = [0xff, 0xd8];
  const seg = (marker: number, body: number[]) =>
    out.push(
      0xff,
      marker,
      (body.length + 2) >> 8,
      (body.length + 2) & 255,
      ...body,
    );
  const entropy = (bits: string) => {
    bits = bits.padEnd(Math.ceil(bits.length / 8) * 8, "1");
    const b: number[] = [];
    for (let i = 0; i < bits.length; i += 8) {
      b.push(parseInt(bits.slice(i, i + 8), 2));
      if (b.at(-1) === 0xff) b.push(0); // stuffed
    }
    return b;
  };
  seg(0xdb, [0, ...new Array(64).fill(1)]);
  seg(0xc2, [8, side >> 8, side & 255, side >> 8, side & 255, 1, 1, 0x11, 0]);
  seg(0xc4, [0x00, 1, ...new Array(15).fill(0), 0]); // DC: symbol 0, code "0"
  seg(0xc4, [0x10, 1, ...new Array(15).fill(0), 0xe0]); // AC: EOB run, code "0"
  const blocks = Math.ceil(side / 8) ** 2;
  seg(0xda, [1, 1, 0x00, 0, 0, 0]);
  for (const b of entropy("0".repeat(blocks))) out.push(b);
  const ac = entropy(
    ("0" + "1".repeat(14)).repeat(Math.ceil(blocks / 32_767)),
  );
  for (let i = 0; i < acScans; i++) {
    seg(0xda, [1, 1, 0x00, 1, 63, 0]);
    for (const b of ac) out.push(b);
  }
  out.push(0xff, 0xd9);
  return new Uint8Array(out);
}

/**
 * `progressiveJpeg(side, acScans)` with its DQT declaring 3 bytes: jpeg-js still reads
 * the 64-byte table, whose first two bytes are `FF D9`, a false end of image to a walk
 * that skips segments by their declared length (issue 29).
 */
export function hiddenScansJpeg(side: number, acScans: number): Uint8Array {
  const real = progressiveJpeg(side, acScans);
  // SOI (2), DQT (FF DB 00 43 00 and 64 table bytes), SOF2 (13), the rest. The frame
  // goes first: a header read that stops at the false end has its size by then.
  const dqt = [0xff, 0xdb, 0, 3, 0, 0xff, 0xd9, ...new Array(62).fill(1)];
  return concat([
    real.subarray(0, 2),
    real.subarray(71, 84),
    new Uint8Array(dqt),
    real.subarray(84),
  ]);
}

/**
 * `progressiveJpeg(side, acScans)` with a comment ending in 0xFF after its frame header
 * and the 0xFF of the next marker dropped: jpeg-js takes the comment's last byte as the
 * marker's (an encoder "ate" it), a walk that wants 0xFF there stops counting.
 */
export function eatenMarkerJpeg(side: number, acScans: number): Uint8Array {
  const real = progressiveJpeg(side, acScans);
  // SOI (2), DQT (69), SOF2 (13), then the first DHT's FF C4.
  const com = new Uint8Array([0xff, 0xfe, 0, 3, 0xff]);
  return concat([real.subarray(0, 84), com, real.subarray(85)]);
}

/**
 * A JPEG segment of `marker` declaring `length` bytes (its fields may say otherwise),
 * put after SOI in `jpeg`.
 */
export function withJpegSegment(
  jpeg: Uint8Array,
  marker: number,
  length: number,
  body: number[],
): Uint8Array {
  const seg = new Uint8Array([
    0xff,
    marker,
    length >> 8,
    length & 255,
    ...body,
  ]);
  return concat([jpeg.subarray(0, 2), seg, jpeg.subarray(2)]);
}
