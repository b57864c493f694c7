/**
 * A PNG's chunks checked and trimmed before fast-png decodes them. fast-png inflates
 * every IDAT (and an iCCP profile) without bound and keeps whatever comes out: a
 * 500-KiB file of deflated zeros declaring 64×64 pixels took 1.6 GiB, and 8 MiB of it
 * would take the process down. Here the header is checked against the PNG spec first
 * (a bit depth of 255 once sized the bound at 2.14 GB for 4096×4096 and took the
 * process past 2.3 GiB), then the image data is inflated once and must come out at
 * exactly the size the header's pixels need; a second IHDR, a palette of more than 256
 * entries and more than `MAX_PNG_CHUNKS` chunks are refused; and fast-png gets only the
 * chunks a picture needs: IHDR, PLTE, tRNS, the image data joined into one IDAT, IEND.
 */
import { crc32, inflateSync } from "node:zlib";
import { PhotoRefusal } from "./refusal.ts";

/** Samples per pixel of each PNG colour type, and the bit depths it allows (PNG §11.2.2). */
const COLOUR_TYPES: Record<number, { channels: number; depths: number[] }> = {
  0: { channels: 1, depths: [1, 2, 4, 8, 16] }, // greyscale
  2: { channels: 3, depths: [8, 16] }, // truecolour
  3: { channels: 1, depths: [1, 2, 4, 8] }, // indexed
  4: { channels: 2, depths: [8, 16] }, // greyscale with alpha
  6: { channels: 4, depths: [8, 16] }, // truecolour with alpha
};
/** Largest width or height PNG allows: 2³¹ − 1. */
const PNG_SIDE_MAX = 0x7fffffff;

/** A PNG's header as the spec allows it. */
export interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colourType: number;
  interlaced: boolean;
  /** Bits per pixel: samples per pixel × bit depth. */
  bitsPerPixel: number;
}
/** Adam7's passes: x start, y start, x step, y step. */
export const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;
/** The chunks kept before the image data; the rest (text, ICC profile, animation) go. */
const KEPT = new Set(["IHDR", "PLTE", "tRNS"]);
/**
 * Most chunks a PNG may have (an 8-MiB file of them averages 128 bytes): fast-png's
 * cost is per chunk, and 700,000 empty IDATs held it 10 s. Encoders write IDATs of
 * 8 KiB (libpng) or more.
 */
export const MAX_PNG_CHUNKS = 65_536;

function corrupted(): never {
  throw new PhotoRefusal("corrupted image");
}

/**
 * The IHDR chunk of the PNG `bytes` (signature checked by the caller), which must come
 * first: 13 bytes, sides of 1 to 2³¹ − 1, a colour type and bit depth that PNG allows
 * together, compression and filter method 0, interlace 0 or 1. Throws `PhotoRefusal`.
 */
export function readPngHeader(bytes: Uint8Array): PngHeader {
  // Signature (8), length (4), "IHDR", 13 bytes of fields, CRC (4).
  if (bytes.length < 33) corrupted();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = String.fromCharCode(...bytes.subarray(12, 16));
  if (view.getUint32(8) !== 13 || type !== "IHDR") corrupted();
  const width = view.getUint32(16), height = view.getUint32(20);
  const [bitDepth, colourType, compression, filter, interlace] = bytes
    .subarray(24, 29);
  const colour = COLOUR_TYPES[colourType];
  if (
    width < 1 || height < 1 || width > PNG_SIDE_MAX || height > PNG_SIDE_MAX ||
    !colour?.depths.includes(bitDepth) || compression !== 0 || filter !== 0 ||
    interlace > 1
  ) {
    corrupted();
  }
  return {
    width,
    height,
    bitDepth,
    colourType,
    interlaced: interlace === 1,
    bitsPerPixel: colour.channels * bitDepth,
  };
}

/** Bytes the image data inflates to for this header (a filter byte per row). */
export function pngDataBytes(
  width: number,
  height: number,
  bitsPerPixel: number,
  interlaced: boolean,
): number {
  const rows = (w: number, h: number) =>
    w > 0 && h > 0 ? h * (1 + Math.ceil((w * bitsPerPixel) / 8)) : 0;
  if (!interlaced) return rows(width, height);
  let sum = 0;
  for (const [xs, ys, dx, dy] of ADAM7) {
    sum += rows(
      Math.ceil((width - xs) / dx),
      Math.ceil((height - ys) / dy),
    );
  }
  return sum;
}

/**
 * The PNG as fast-png may decode it: one valid IHDR, first; image data that inflates to
 * exactly what its pixels need; only the chunks of `KEPT`. Throws `PhotoRefusal`.
 */
export function guardPng(bytes: Uint8Array): Uint8Array {
  const header = readPngHeader(bytes);
  const expected = pngDataBytes(
    header.width,
    header.height,
    header.bitsPerPixel,
    header.interlaced,
  );
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kept: Uint8Array[] = [bytes.subarray(0, 8)];
  const idat: Uint8Array[] = [];
  let pos = 8;
  let ended = false;
  for (let chunks = 0; !ended; chunks++) {
    if (pos + 12 > bytes.length || chunks >= MAX_PNG_CHUNKS) corrupted();
    const length = view.getUint32(pos);
    const end = pos + 12 + length;
    if (end > bytes.length) corrupted();
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    const data = bytes.subarray(pos + 8, pos + 8 + length);
    if ((type === "IHDR") !== (pos === 8)) corrupted(); // first, and only once
    // A palette has at most 256 entries (fast-png keeps each as an array of three).
    if (type === "PLTE" && (length > 768 || length % 3 !== 0)) corrupted();
    if (type === "tRNS" && length > 256) corrupted();
    if (type === "IDAT") {
      // Joined into one chunk below, so each one's CRC is checked here.
      if (crc32(bytes.subarray(pos + 4, end - 4)) !== view.getUint32(end - 4)) {
        corrupted();
      }
      idat.push(data);
    }
    if (type === "IEND") ended = true;
    if (KEPT.has(type) && idat.length === 0) {
      kept.push(bytes.subarray(pos, end));
    }
    pos = end;
  }
  const all = join(idat);
  let inflated: number;
  try {
    inflated = inflateSync(all, { maxOutputLength: expected }).length;
  } catch {
    corrupted(); // more data than the pixels need, or not a zlib stream
  }
  if (inflated !== expected) corrupted(); // fewer rows than the header says
  return join([...kept, chunk("IDAT", all), chunk("IEND", new Uint8Array())]);
}

function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of parts) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** One chunk: length, type, data, CRC. */
function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}
