import assert from "node:assert/strict";
import {
  CHUNK_BYTES,
  packPhoto,
  unpackPhoto,
} from "../../../lib/photo/blob.ts";
import { smileAvatar } from "../render/photo/_avatar.ts";

/** Bytes that do not compress (xorshift noise), so the chunks are full: the worst case. */
function random(n: number, seed: number): Uint8Array {
  let x = seed;
  return new Uint8Array(n).map(() => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x & 255;
  });
}

/** Whether two arrays hold the same values (no diff of 400,000 bytes on failure). */
function same(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

type Pixels = Awaited<ReturnType<typeof unpackPhoto>>;

/** `a` and `b` hold the same pixels, mesh and teeth layer. */
function assertSame(a: Pixels, b: Pixels): void {
  assert.ok(same(a.i420, b.i420), "i420");
  assert.ok(same(a.alpha, b.alpha), "alpha");
  assert.ok(same(a.landmarks, b.landmarks), "landmarks");
  assert.equal(!a.teeth, !b.teeth, "teeth layer");
  if (!a.teeth || !b.teeth) return;
  const { i420, upper, lower, ...box } = a.teeth;
  const { i420: i2, upper: u2, lower: l2, ...box2 } = b.teeth;
  assert.deepEqual(box, box2);
  assert.ok(same(i420, i2) && same(upper, u2) && same(lower, l2), "layer");
}

function noise() {
  const i420 = random(512 * 512 * 3 / 2, 7);
  const alpha = random(512 * 512, 11);
  const landmarks = new Float32Array(478 * 3).map((_, i) => i * 1.25 - 300.5);
  return { i420, alpha, landmarks, teeth: null, width: 512, height: 512 };
}

Deno.test("packPhoto() cuts the deflated pixels into chunks below KV's 64 KiB that unpack to the same", async () => {
  const pixels = noise();
  const packed = await packPhoto(pixels);
  assert.ok(
    packed.chunks.every((c) => c.length <= CHUNK_BYTES && c.length < 64 * 1024),
  );
  assert.equal(packed.chunks.reduce((n, c) => n + c.length, 0), packed.bytes);
  // Even incompressible, the whole fits one KV commit (800 KiB with keys).
  assert.ok(packed.bytes < 700 * 1024, `${packed.bytes} bytes`);
  const back = await unpackPhoto(packed.chunks, packed);
  assertSame(back, pixels);
});

Deno.test("unpackPhoto() refuses chunks that do not match their manifest", async () => {
  const packed = await packPhoto(noise());
  const flipped = packed.chunks.map((c) => c.slice());
  flipped[2][7] ^= 1;
  await assert.rejects(unpackPhoto(flipped, packed), /checksum/);
  await assert.rejects(
    unpackPhoto(packed.chunks.slice(0, -1), packed),
    /checksum/,
  );
});

Deno.test("packPhoto() refuses pixels of another size", async () => {
  await assert.rejects(
    packPhoto({ ...noise(), alpha: new Uint8Array(10) }),
    RangeError,
  );
});

Deno.test("packPhoto() keeps the teeth layer (format 2): it unpacks the same", async () => {
  const teeth = {
    x: 200,
    y: 280,
    w: 100,
    h: 50,
    i420: random(100 * 50 * 3 / 2, 5),
    upper: new Float32Array(22).map((_, i) => 200 + i),
    lower: new Float32Array(22).map((_, i) => 300 + i),
  };
  const pixels = { ...noise(), teeth };
  const packed = await packPhoto(pixels);
  assertSame(await unpackPhoto(packed.chunks, packed), pixels);
  await assert.rejects(
    packPhoto({ ...pixels, teeth: { ...teeth, w: 90 } }),
    RangeError,
  );
});

/** `raw` deflated and cut as packPhoto cuts, with its manifest's size and checksum. */
async function packRaw(raw: Uint8Array<ArrayBuffer>) {
  const out = new Response(
    new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate")),
  );
  const packed = new Uint8Array(await out.arrayBuffer());
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", packed),
  );
  const sha256 = Array.from(digest, (b) => b.toString(16).padStart(2, "0"))
    .join("");
  const chunks = [];
  for (let at = 0; at < packed.length; at += CHUNK_BYTES) {
    chunks.push(packed.slice(at, at + CHUNK_BYTES));
  }
  return { chunks, bytes: packed.length, sha256 };
}

Deno.test("unpackPhoto() loads an avatar stored before the teeth layer (format 1) with its mouth closed", async () => {
  // A smiling portrait as format 1 stored it: the photo's mouth, open over its
  // teeth, and the mesh's inner lips where they were.
  const now = await smileAvatar();
  const t = now.teeth!;
  const i420 = new Uint8Array(now.i420);
  const n = 512 * 512, cw = 256;
  for (let r = 0; r < t.h; r++) {
    i420.set(t.i420.subarray(r * t.w, (r + 1) * t.w), (t.y + r) * 512 + t.x);
  }
  for (let r = 0; r < t.h / 2; r++) {
    const d = ((t.y >> 1) + r) * cw + (t.x >> 1), q = t.w / 2;
    i420.set(
      t.i420.subarray(t.w * t.h + r * q, t.w * t.h + (r + 1) * q),
      n + d,
    );
    i420.set(
      t.i420.subarray(
        t.w * t.h * 5 / 4 + r * q,
        t.w * t.h * 5 / 4 + (r + 1) * q,
      ),
      n * 5 / 4 + d,
    );
  }
  const landmarks = new Float32Array(now.landmarks);
  const inner = [
    [78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308],
    [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308],
  ];
  inner.forEach((idx, c) =>
    idx.forEach((i, k) => {
      landmarks[i * 3] = (c ? t.lower : t.upper)[2 * k];
      landmarks[i * 3 + 1] = (c ? t.lower : t.upper)[2 * k + 1];
    })
  );
  const raw = new Uint8Array(n * 3 / 2 + n + 478 * 12);
  raw.set(i420);
  raw.set(now.alpha, n * 3 / 2);
  const view = new DataView(raw.buffer, n * 5 / 2);
  landmarks.forEach((v, i) => view.setFloat32(i * 4, v, true));
  const v1 = await packRaw(raw);
  const back = await unpackPhoto(v1.chunks, v1);
  assert.ok(back.teeth, "the photo's teeth become its teeth layer");
  assert.ok(same(back.alpha, now.alpha), "alpha");
  // Closed: the inner lips meet, and the pixels between where they were changed.
  const gap = back.landmarks[14 * 3 + 1] - back.landmarks[13 * 3 + 1];
  assert.ok(gap <= 1.5, `the lips ${gap} px apart`);
  let changed = 0;
  for (let i = 0; i < n; i++) if (back.i420[i] !== i420[i]) changed++;
  assert.ok(changed > 500, `${changed} pixels of the mouth closed`);
  // Noise where a mesh should be still loads, as it was.
  const noisy = noise();
  const old = new Uint8Array(n * 3 / 2 + n + 478 * 12);
  old.set(noisy.i420), old.set(noisy.alpha, n * 3 / 2);
  new Uint8Array(old.buffer, n * 5 / 2).set(
    new Uint8Array(noisy.landmarks.buffer),
  );
  const p2 = await packRaw(old);
  assertSame(await unpackPhoto(p2.chunks, p2), noisy);
});

Deno.test("packPhoto() stores each framing's size, its planes filtered row by row (smaller; an unfiltered store still loads)", async () => {
  const w = 1280, h = 720, n = w * h;
  // A smooth picture with grain: what a photo's rows are like to deflate.
  const grain = random(n * 5 / 2, 3);
  const i420 = new Uint8Array(n * 3 / 2).map((_, i) =>
    ((i % w) + (Math.floor(i / w) >> 1) + (grain[i] & 7)) & 255
  );
  const alpha = new Uint8Array(n).map((_, i) => (i % w) < w / 2 ? 255 : 0);
  const pixels = {
    i420,
    alpha,
    landmarks: new Float32Array(478 * 3).fill(100),
    teeth: null,
    width: w,
    height: h,
  };
  const packed = await packPhoto(pixels);
  assert.equal(packed.filter, "up");
  const back = await unpackPhoto(packed.chunks, {
    ...packed,
    width: w,
    height: h,
  });
  assertSame(back, pixels);
  // The same bytes unfiltered (as stored before the filter): larger, and loaded
  // from a manifest without `filter`.
  const raw = new Uint8Array(n * 5 / 2 + 478 * 12 + 5);
  raw.set(i420), raw.set(alpha, n * 3 / 2);
  new Uint8Array(raw.buffer, n * 5 / 2, 478 * 12).set(
    new Uint8Array(pixels.landmarks.buffer),
  );
  raw.set([0x50, 0x48, 0x54, 0x32, 0], n * 5 / 2 + 478 * 12);
  const plain = await packRaw(raw);
  assert.ok(
    packed.bytes < 0.8 * plain.bytes,
    `${packed.bytes} bytes filtered, ${plain.bytes} not`,
  );
  assertSame(
    await unpackPhoto(plain.chunks, { ...plain, width: w, height: h }),
    pixels,
  );
  // A size that is no framing's is refused both ways.
  await assert.rejects(packPhoto({ ...pixels, width: 1000 }), RangeError);
  await assert.rejects(
    unpackPhoto(packed.chunks, { ...packed, width: 1000, height: 720 }),
    /wrong size/,
  );
});
