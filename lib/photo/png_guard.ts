/**
 * A PNG's chunks checked and trimmed before fast-png decodes them. fast-png inflates
 * every IDAT (and an iCCP profile) without bound and keeps whatever comes out: a
 * 500-KiB file of deflated zeros declaring 64×64 pixels took 1.6 GiB, and 8 MiB of it
 * would take the process down. Here the image data is inflated once with its size
 * bounded by what the header's pixels need, a second IHDR and a palette of more than
 * 256 entries are refused, and only the chunks a picture needs (IHDR, PLTE, tRNS, IDAT,
 * IEND) are passed on.
 */
import { inflateSync } from "node:zlib";
import { PhotoRefusal } from "./refusal.ts";

/** Samples per pixel of each PNG colour type. */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
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
/** The chunks kept; every other one (text, ICC profile, animation) is dropped. */
const KEPT = new Set(["IHDR", "PLTE", "tRNS", "IDAT", "IEND"]);

function corrupted(): never {
  throw new PhotoRefusal("corrupted image");
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
 * The PNG as fast-png may decode it: one IHDR, first; image data that inflates to no
 * more than its pixels need; only the chunks of `KEPT`. Throws `PhotoRefusal`.
 */
export function guardPng(bytes: Uint8Array): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kept: Uint8Array[] = [bytes.subarray(0, 8)];
  const idat: Uint8Array[] = [];
  let expected = -1;
  let pos = 8;
  let ended = false;
  while (!ended) {
    if (pos + 12 > bytes.length) corrupted();
    const length = view.getUint32(pos);
    const end = pos + 12 + length;
    if (end > bytes.length) corrupted();
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    const data = bytes.subarray(pos + 8, pos + 8 + length);
    if ((type === "IHDR") !== (expected < 0)) corrupted(); // first, and only once
    if (type === "IHDR") {
      if (length !== 13) corrupted();
      const channels = CHANNELS[data[9]];
      if (channels === undefined) corrupted();
      expected = pngDataBytes(
        view.getUint32(pos + 8),
        view.getUint32(pos + 12),
        channels * data[8],
        data[12] === 1,
      );
    }
    // A palette has at most 256 entries (fast-png keeps each as an array of three).
    if (type === "PLTE" && (length > 768 || length % 3 !== 0)) corrupted();
    if (type === "tRNS" && length > 256) corrupted();
    if (type === "IDAT") idat.push(data);
    if (type === "IEND") ended = true;
    if (KEPT.has(type)) kept.push(bytes.subarray(pos, end));
    pos = end;
  }
  const all = new Uint8Array(idat.reduce((n, d) => n + d.length, 0));
  let at = 0;
  for (const d of idat) {
    all.set(d, at);
    at += d.length;
  }
  try {
    inflateSync(all, { maxOutputLength: Math.max(1, expected) });
  } catch {
    corrupted(); // more data than the pixels need, or not a zlib stream
  }
  const out = new Uint8Array(kept.reduce((n, c) => n + c.length, 0));
  at = 0;
  for (const c of kept) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
