/**
 * A prepared avatar's pixels and mesh as one deflated byte string, cut into KV-sized
 * chunks: the I420 crop, then the alpha, then the landmarks (float32, little-endian),
 * then (format 2) the teeth layer: `PHT2`, a flag, and when set its box (4 × uint16),
 * the inner lip contours (2 × 22 float32) and its I420 pixels. Format 1 (before the
 * layer) ends after the landmarks; it is loaded with its mouth closed as preparation
 * closes it now (./mouth.ts).
 * Measured on the Hopper portrait: 661,096 bytes raw, 261,996 deflated (5 chunks).
 */
import {
  LANDMARK_COUNT,
  PHOTO_SIZE,
  type TeethLayer,
} from "../render/photo/types.ts";
import { restMouth } from "./mouth.ts";

/** Bytes per chunk: below KV's 64-KiB value limit with room for its encoding. */
export const CHUNK_BYTES = 60 * 1024;

const I420_BYTES = PHOTO_SIZE * PHOTO_SIZE * 3 / 2;
const ALPHA_BYTES = PHOTO_SIZE * PHOTO_SIZE;
const LANDMARK_BYTES = LANDMARK_COUNT * 3 * 4;
const RAW_BYTES = I420_BYTES + ALPHA_BYTES + LANDMARK_BYTES;

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
function readTeeth(raw: Uint8Array<ArrayBuffer>): TeethLayer | null {
  const bad = () => new Error("stored photo avatar has the wrong size");
  const at = RAW_BYTES;
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
    w === 0 || h === 0 || (x | y | w | h) & 1 || x + w > PHOTO_SIZE ||
    y + h > PHOTO_SIZE || raw.length !== at + LAYER_HEAD + w * h * 3 / 2 ||
    !pts.every((v) =>
      Number.isFinite(v) && v > -PHOTO_SIZE && v < 2 * PHOTO_SIZE
    )
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

/** The chunks as stored, with the deflated size and SHA-256 their manifest records. */
export interface PackedPhoto {
  chunks: Uint8Array[];
  bytes: number;
  sha256: string;
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
export async function packPhoto(p: PhotoPixels): Promise<PackedPhoto> {
  if (
    p.i420.length !== I420_BYTES || p.alpha.length !== ALPHA_BYTES ||
    p.landmarks.length !== LANDMARK_COUNT * 3
  ) {
    throw new RangeError("a photo avatar is 512×512 with 478 landmarks");
  }
  const layer = teethBytes(p.teeth);
  const raw = new Uint8Array(RAW_BYTES + layer.length);
  raw.set(layer, RAW_BYTES);
  raw.set(p.i420, 0);
  raw.set(p.alpha, I420_BYTES);
  const view = new DataView(raw.buffer, I420_BYTES + ALPHA_BYTES);
  p.landmarks.forEach((v, i) => view.setFloat32(i * 4, v, true));
  const packed = await pipe(raw, new CompressionStream("deflate"));
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < packed.length; at += CHUNK_BYTES) {
    chunks.push(packed.slice(at, at + CHUNK_BYTES));
  }
  return { chunks, bytes: packed.length, sha256: await sha256Hex(packed) };
}

/**
 * The chunks of `packPhoto` back into pixels and mesh; throws when they do not match
 * the size and checksum their manifest recorded.
 */
export async function unpackPhoto(
  chunks: Uint8Array[],
  expect: { bytes: number; sha256: string },
): Promise<PhotoPixels> {
  const packed = join(chunks);
  if (
    packed.length !== expect.bytes || await sha256Hex(packed) !== expect.sha256
  ) {
    throw new Error("stored photo avatar fails its checksum");
  }
  const raw = await pipe(packed, new DecompressionStream("deflate"));
  if (raw.length < RAW_BYTES) {
    throw new Error("stored photo avatar has the wrong size");
  }
  const view = new DataView(raw.buffer, I420_BYTES + ALPHA_BYTES);
  const landmarks = new Float32Array(LANDMARK_COUNT * 3);
  for (let i = 0; i < landmarks.length; i++) {
    landmarks[i] = view.getFloat32(i * 4, true);
  }
  const i420 = raw.slice(0, I420_BYTES);
  const alpha = raw.slice(I420_BYTES, I420_BYTES + ALPHA_BYTES);
  if (raw.length > RAW_BYTES) {
    return { i420, alpha, landmarks, teeth: readTeeth(raw) };
  }
  // Format 1: prepared before the rest face closed its mouth; closed now.
  const rest = restMouth({
    width: PHOTO_SIZE,
    height: PHOTO_SIZE,
    i420,
    landmarks,
  });
  return {
    i420: rest.i420,
    alpha,
    landmarks: rest.landmarks,
    teeth: rest.teeth,
  };
}
