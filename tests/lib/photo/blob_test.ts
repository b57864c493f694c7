import assert from "node:assert/strict";
import {
  CHUNK_BYTES,
  packPhoto,
  unpackPhoto,
} from "../../../lib/photo/blob.ts";

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

function noise() {
  const i420 = random(512 * 512 * 3 / 2, 7);
  const alpha = random(512 * 512, 11);
  const landmarks = new Float32Array(478 * 3).map((_, i) => i * 1.25 - 300.5);
  return { i420, alpha, landmarks };
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
  assert.deepEqual(back, pixels);
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
