/**
 * A prepared avatar's pixels and mesh as one deflated byte string, cut into KV-sized
 * chunks: the I420 crop (its size, one of the framings', is its manifest's), then the
 * alpha, then the landmarks (float32, little-endian),
 * then (format 2) the teeth layer: `PHT2`, a flag, and when set its box (4 × uint16),
 * the inner lip contours (2 × 22 float32) and its I420 pixels. Format 1 (before the
 * layer) ends after the landmarks; it is loaded with its mouth closed as preparation
 * closes it now (./mouth.ts).
 * Measured on the Hopper portrait: 661,096 bytes raw, 261,996 deflated (5 chunks).
 */
import {
  framingOf,
  LANDMARK_COUNT,
  PHOTO_SIZE,
  type TeethLayer,
} from "../render/photo/types.ts";
import { restMouth } from "./mouth.ts";
import { PhotoRefusal } from "./refusal.ts";

/** Bytes per chunk: below KV's 64-KiB value limit with room for its encoding. */
export const CHUNK_BYTES = 60 * 1024;

const LANDMARK_BYTES = LANDMARK_COUNT * 3 * 4;

/** Where each part lies in the raw bytes of a `width`×`height` avatar. */
function layout(width: number, height: number) {
  const i420 = width * height * 3 / 2, alpha = width * height;
  return { i420, alpha, raw: i420 + alpha + LANDMARK_BYTES };
}

/** A picture's size, as its manifest records it. */
export interface PhotoSize {
  width: number;
  height: number;
}

export interface PhotoPixels {
  i420: Uint8Array;
  alpha: Uint8Array;
  landmarks: Float32Array;
  teeth?: TeethLayer | null;
}

const MAGIC = [0x50, 0x48, 0x54, 0x32]; // "PHT2"
/** Points of each inner lip contour in the layer. */
const CONTOUR_POINTS = 11;
const LAYER_HEAD = 4 + 1 + 8 + 2 * CONTOUR_POINTS * 2 * 4;

function teethBytes(t: TeethLayer | null | undefined): Uint8Array {
  if (!t) return new Uint8Array([...MAGIC, 0]);
  if (
    t.i420.length !== t.w * t.h * 3 / 2 ||
    t.upper.length !== 2 * CONTOUR_POINTS ||
    t.lower.length !== 2 * CONTOUR_POINTS
  ) throw new RangeError("a teeth layer does not match its box");
  const out = new Uint8Array(LAYER_HEAD + t.i420.length);
  out.set(MAGIC);
  out[4] = 1;
  const view = new DataView(out.buffer);
  [t.x, t.y, t.w, t.h].forEach((v, i) => view.setUint16(5 + 2 * i, v, true));
  [...t.upper, ...t.lower].forEach((v, i) =>
    view.setFloat32(13 + 4 * i, v, true)
  );
  out.set(t.i420, LAYER_HEAD);
  return out;
}

/** The teeth layer after the landmarks; throws when it is not one. */
function readTeeth(
  raw: Uint8Array<ArrayBuffer>,
  { width, height }: PhotoSize,
): TeethLayer | null {
  const bad = () => new Error("stored photo avatar has the wrong size");
  const at = layout(width, height).raw;
  const side = Math.max(width, height);
  if (
    raw.length < at + 5 || MAGIC.some((b, i) => raw[at + i] !== b) ||
    raw[at + 4] > 1
  ) throw bad();
  if (raw[at + 4] === 0) {
    if (raw.length !== at + 5) throw bad();
    return null;
  }
  if (raw.length < at + LAYER_HEAD) throw bad();
  const view = new DataView(raw.buffer, at);
  const [x, y, w, h] = [0, 1, 2, 3].map((i) => view.getUint16(5 + 2 * i, true));
  const pts = Float32Array.from(
    { length: 4 * CONTOUR_POINTS },
    (_, i) => view.getFloat32(13 + 4 * i, true),
  );
  if (
    w === 0 || h === 0 || (x | y | w | h) & 1 || x + w > width ||
    y + h > height || raw.length !== at + LAYER_HEAD + w * h * 3 / 2 ||
    !pts.every((v) => Number.isFinite(v) && v > -side && v < 2 * side)
  ) throw bad();
  return {
    x,
    y,
    w,
    h,
    i420: raw.slice(at + LAYER_HEAD),
    upper: pts.slice(0, 2 * CONTOUR_POINTS),
    lower: pts.slice(2 * CONTOUR_POINTS),
  };
}

async function pipe(
  bytes: Uint8Array<ArrayBuffer>,
  stream: CompressionStream | DecompressionStream,
): Promise<Uint8Array<ArrayBuffer>> {
  const out = new Response(new Blob([bytes]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The chunks as stored, with the deflated size and SHA-256 their manifest records, and
 * how the planes were filtered before deflating: `up`, each row as its difference from
 * the row above (a portrait's planes deflate 28 % smaller so: a 720×1280 one from 771
 * to 559 KiB, where one commit holds 800 KiB); absent, stored as they are (avatars
 * packed before the filter).
 */
export interface PackedPhoto {
  chunks: Uint8Array[];
  bytes: number;
  sha256: string;
  filter: "up";
}

/** Deflated bytes past which an avatar is not stored (one commit holds 800 KiB). */
export const MAX_PACKED_BYTES = 760 * 1024;

/**
 * The planes of a `width`×`height` raw (Y, U, V, alpha), each as `[offset, width,
 * rows]`.
 */
function planes(
  width: number,
  height: number,
): Array<[number, number, number]> {
  const n = width * height, cw = width >> 1, ch = height >> 1;
  return [
    [0, width, height],
    [n, cw, ch],
    [n + cw * ch, cw, ch],
    [n + 2 * cw * ch, width, height],
  ];
}

/** Each plane's rows of `raw` replaced by their difference from the row above. */
function filterUp(raw: Uint8Array, width: number, height: number): void {
  for (const [at, w, rows] of planes(width, height)) {
    for (let i = at + w * rows - 1; i >= at + w; i--) {
      raw[i] = (raw[i] - raw[i - w]) & 255;
    }
  }
}

/** `filterUp` undone. */
function unfilterUp(raw: Uint8Array, width: number, height: number): void {
  for (const [at, w, rows] of planes(width, height)) {
    for (let i = at + w; i < at + w * rows; i++) {
      raw[i] = (raw[i] + raw[i - w]) & 255;
    }
  }
}

function join(chunks: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** The avatar's pixels and mesh, deflated and cut into chunks of `CHUNK_BYTES`. */
export async function packPhoto(
  p: PhotoPixels & PhotoSize,
): Promise<PackedPhoto> {
  const at = layout(p.width, p.height);
  if (
    framingOf(p.width, p.height) === null || p.i420.length !== at.i420 ||
    p.alpha.length !== at.alpha || p.landmarks.length !== LANDMARK_COUNT * 3
  ) {
    throw new RangeError(
      "a photo avatar is one framing's size, with 478 landmarks",
    );
  }
  const layer = teethBytes(p.teeth);
  const raw = new Uint8Array(at.raw + layer.length);
  raw.set(layer, at.raw);
  raw.set(p.i420, 0);
  raw.set(p.alpha, at.i420);
  const view = new DataView(raw.buffer, at.i420 + at.alpha);
  p.landmarks.forEach((v, i) => view.setFloat32(i * 4, v, true));
  filterUp(raw, p.width, p.height);
  const packed = await pipe(raw, new CompressionStream("deflate"));
  if (packed.length > MAX_PACKED_BYTES) {
    throw new PhotoRefusal("photo too detailed to store in this framing");
  }
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < packed.length; at += CHUNK_BYTES) {
    chunks.push(packed.slice(at, at + CHUNK_BYTES));
  }
  return {
    chunks,
    bytes: packed.length,
    sha256: await sha256Hex(packed),
    filter: "up",
  };
}

/**
 * The chunks of `packPhoto` back into pixels and mesh; throws when they do not match
 * the size and checksum their manifest recorded. A manifest without a size is of
 * the square framing (stored before the others were).
 */
export async function unpackPhoto(
  chunks: Uint8Array[],
  expect:
    & { bytes: number; sha256: string; filter?: "up" }
    & Partial<PhotoSize>,
): Promise<PhotoPixels> {
  const size = {
    width: expect.width ?? PHOTO_SIZE,
    height: expect.height ?? PHOTO_SIZE,
  };
  const at = layout(size.width, size.height);
  if (framingOf(size.width, size.height) === null) {
    throw new Error("stored photo avatar has the wrong size");
  }
  const packed = join(chunks);
  if (
    packed.length !== expect.bytes || await sha256Hex(packed) !== expect.sha256
  ) {
    throw new Error("stored photo avatar fails its checksum");
  }
  const raw = await pipe(packed, new DecompressionStream("deflate"));
  if (raw.length < at.raw) {
    throw new Error("stored photo avatar has the wrong size");
  }
  if (expect.filter === "up") unfilterUp(raw, size.width, size.height);
  const view = new DataView(raw.buffer, at.i420 + at.alpha);
  const landmarks = new Float32Array(LANDMARK_COUNT * 3);
  for (let i = 0; i < landmarks.length; i++) {
    landmarks[i] = view.getFloat32(i * 4, true);
  }
  const i420 = raw.slice(0, at.i420);
  const alpha = raw.slice(at.i420, at.i420 + at.alpha);
  if (raw.length > at.raw) {
    return { i420, alpha, landmarks, teeth: readTeeth(raw, size) };
  }
  // Format 1: prepared before the rest face closed its mouth; closed now.
  const rest = restMouth({ ...size, i420, landmarks });
  return {
    i420: rest.i420,
    alpha,
    landmarks: rest.landmarks,
    teeth: rest.teeth,
  };
}
