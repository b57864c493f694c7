/**
 * A prepared avatar's pixels and mesh as one deflated byte string, cut into KV-sized
 * chunks: the I420 crop, then the alpha, then the landmarks (float32, little-endian).
 * Measured on the Hopper portrait: 661,096 bytes raw, 261,996 deflated (5 chunks).
 */
import { LANDMARK_COUNT, PHOTO_SIZE } from "../render/photo/types.ts";

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
  const raw = new Uint8Array(RAW_BYTES);
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
  if (raw.length !== RAW_BYTES) {
    throw new Error("stored photo avatar has the wrong size");
  }
  const view = new DataView(raw.buffer, I420_BYTES + ALPHA_BYTES);
  const landmarks = new Float32Array(LANDMARK_COUNT * 3);
  for (let i = 0; i < landmarks.length; i++) {
    landmarks[i] = view.getFloat32(i * 4, true);
  }
  return {
    i420: raw.slice(0, I420_BYTES),
    alpha: raw.slice(I420_BYTES, I420_BYTES + ALPHA_BYTES),
    landmarks,
  };
}
