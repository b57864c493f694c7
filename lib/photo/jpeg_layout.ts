/**
 * A JPEG's segments walked as jpeg-js will read them, before it runs: its frame size, EXIF
 * orientation and number of scans. jpeg-js trusts a segment's header fields over its
 * declared length (a DQT table is 65 or 129 bytes, a frame or scan header as long as its
 * component count says, whatever the length): a DQT declaring 3 bytes whose table began
 * `FF D9` ended an earlier count at a false end of image while jpeg-js decoded the
 * thousands of scans behind it. So every segment jpeg-js reads by its fields must declare
 * exactly the length those fields take, every marker must sit where the walk expects
 * one, and every marker must be one jpeg-js reads; anything else is a `corrupted image`.
 */
import { PhotoRefusal } from "./refusal.ts";

/** What the walk found: the frame's size as stored, the orientation, the scans. */
export interface JpegLayout {
  width: number;
  height: number;
  /** EXIF orientation 1…8 (1 without one). */
  orientation: number;
  /** Scans (SOS segments), counted up to one past `maxScans`. */
  scans: number;
}

function corrupted(): never {
  throw new PhotoRefusal("corrupted image");
}

/** Frame headers jpeg-js decodes: baseline, extended and progressive DCT. */
const SOF = new Set([0xc0, 0xc1, 0xc2]);
const DHT = 0xc4, SOI = 0xd8, EOI = 0xd9, SOS = 0xda, DQT = 0xdb;
const DNL = 0xdc, DRI = 0xdd, COM = 0xfe;

/**
 * Walks the JPEG `bytes` (SOI first) to its end of image, counting scans up to one past
 * `maxScans`. Throws `PhotoRefusal("corrupted image")` for a segment whose length differs
 * from what its fields take, a byte other than 0xFF where a marker belongs, a marker
 * jpeg-js does not read, a second frame header, a scan before the frame or naming a
 * component the frame lacks. Data that simply ends (a file cut short) ends the walk:
 * jpeg-js refuses it, and nothing can hide past the end.
 */
export function readJpegLayout(
  bytes: Uint8Array,
  maxScans: number,
): JpegLayout {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let orientation = 1;
  let frame: { width: number; height: number; ids: number[] } | null = null;
  let scans = 0;
  let pos = 2;
  if (bytes[0] !== 0xff || bytes[1] !== SOI) corrupted();
  while (pos + 1 < bytes.length && scans <= maxScans) {
    // jpeg-js re-reads a marker whose 0xFF came one byte early: none may.
    if (bytes[pos] !== 0xff) corrupted();
    const marker = bytes[pos + 1];
    if (marker === 0xff) {
      pos++; // fill byte
      continue;
    }
    if (marker === EOI) break;
    if (pos + 4 > bytes.length) break;
    const length = view.getUint16(pos + 2);
    const body = pos + 4;
    const end = pos + 2 + length;
    if (length < 2 || end > bytes.length) corrupted();
    const size = length - 2;
    if (marker === DQT) {
      checkDqt(bytes, body, end);
    } else if (marker === DHT) {
      checkDht(bytes, body, end);
    } else if (SOF.has(marker)) {
      if (frame) corrupted(); // jpeg-js allocates every frame's blocks, then refuses
      frame = readFrame(bytes, view, body, size);
    } else if (marker === SOS) {
      checkScanHeader(bytes, body, size, frame);
      scans++;
    } else if (marker === DRI || marker === DNL) {
      if (size !== 2) corrupted();
    } else if (marker === 0xe1) {
      orientation = exifOrientation(bytes, body, size) ?? orientation;
    } else if (!((marker >= 0xe0 && marker <= 0xef) || marker === COM)) {
      corrupted(); // RSTn, stuffed 0x00, SOF3…, DAC, TEM, reserved: not read
    }
    pos = end;
    if (marker === SOS) pos = scanEnd(bytes, pos);
  }
  if (!frame) corrupted();
  return { width: frame.width, height: frame.height, orientation, scans };
}

/** Each table: Pq (0: 8-bit, 1: 16-bit) and Tq (0…3), then 64 values. */
function checkDqt(bytes: Uint8Array, at: number, end: number): void {
  if (at === end) corrupted();
  while (at < end) {
    const pq = bytes[at] >> 4, tq = bytes[at] & 15;
    if (pq > 1 || tq > 3) corrupted();
    at += 1 + 64 * (pq + 1);
  }
  if (at !== end) corrupted();
}

/** Each table: Tc (0: DC, 1: AC) and Th (0…3), 16 code counts, that many symbols. */
function checkDht(bytes: Uint8Array, at: number, end: number): void {
  if (at === end) corrupted();
  while (at < end) {
    if (at + 17 > end) corrupted();
    const tc = bytes[at] >> 4, th = bytes[at] & 15;
    if (tc > 1 || th > 3) corrupted();
    let symbols = 0;
    for (let i = 1; i <= 16; i++) symbols += bytes[at + i];
    if (symbols > 256) corrupted();
    at += 17 + symbols;
  }
  if (at !== end) corrupted();
}

/** P (8), Y, X, Nf (1…4), then per component: id, H and V (1…4), Tq (0…3). */
function readFrame(
  bytes: Uint8Array,
  view: DataView,
  at: number,
  size: number,
): { width: number; height: number; ids: number[] } {
  if (size < 6) corrupted();
  const count = bytes[at + 5];
  if (bytes[at] !== 8 || count < 1 || count > 4 || size !== 6 + 3 * count) {
    corrupted();
  }
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const c = at + 6 + 3 * i;
    const h = bytes[c + 1] >> 4, v = bytes[c + 1] & 15;
    if (ids.includes(bytes[c]) || h < 1 || h > 4 || v < 1 || v > 4) corrupted();
    if (bytes[c + 2] > 3) corrupted();
    ids.push(bytes[c]);
  }
  return {
    height: view.getUint16(at + 1),
    width: view.getUint16(at + 3),
    ids,
  };
}

/** Ns (1…4), per component: a frame component's id and its tables; Ss, Se, Ah/Al. */
function checkScanHeader(
  bytes: Uint8Array,
  at: number,
  size: number,
  frame: { ids: number[] } | null,
): void {
  if (!frame || size < 1) corrupted();
  const count = bytes[at];
  if (count < 1 || count > 4 || size !== 4 + 2 * count) corrupted();
  for (let i = 0; i < count; i++) {
    if (!frame.ids.includes(bytes[at + 1 + 2 * i])) corrupted();
  }
}

/**
 * Where a scan's entropy-coded data starting at `pos` ends: its next marker (its 0xFF
 * bytes are stuffed with 0x00; RSTn and fill bytes are not markers), or the data's end.
 */
function scanEnd(bytes: Uint8Array, pos: number): number {
  while (pos + 1 < bytes.length) {
    const next = bytes[pos + 1];
    if (
      bytes[pos] === 0xff && next !== 0 && next !== 0xff &&
      (next < 0xd0 || next > 0xd7)
    ) return pos;
    pos++;
  }
  return bytes.length;
}

/** The orientation tag (0x0112) of an APP1 Exif segment, when it holds one. */
function exifOrientation(
  bytes: Uint8Array,
  start: number,
  length: number,
): number | undefined {
  if (
    length < 14 ||
    String.fromCharCode(...bytes.subarray(start, start + 6)) !== "Exif\0\0"
  ) {
    return undefined;
  }
  const tiff = start + 6;
  const end = start + length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const order = String.fromCharCode(bytes[tiff], bytes[tiff + 1]);
  if (order !== "II" && order !== "MM") return undefined;
  const little = order === "II";
  const ifd = tiff + view.getUint32(tiff + 4, little);
  if (ifd + 2 > end) return undefined;
  const count = view.getUint16(ifd, little);
  for (let i = 0; i < count; i++) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > end) return undefined;
    if (view.getUint16(entry, little) === 0x0112) {
      const value = view.getUint16(entry + 8, little);
      return value >= 1 && value <= 8 ? value : undefined;
    }
  }
  return undefined;
}
