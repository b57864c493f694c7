import assert from "node:assert/strict";
import { resample } from "../../../lib/photo/resample.ts";

Deno.test("resample() averages areas when shrinking and repeats the edge outside", () => {
  // A 1-px checkerboard shrunk 4× averages to mid grey instead of aliasing to black or white.
  const src = new Uint8Array(16 * 16);
  for (let y = 0; y < 16; y++) {
    for (let x = 0; x < 16; x++) src[y * 16 + x] = (x + y) % 2 ? 255 : 0;
  }
  const small = resample(src, 16, 16, 1, { x: 0, y: 0, w: 16, h: 16 }, 4, 4);
  assert.ok(small.every((v) => v === 128 || v === 127), `${small}`);
  // A rectangle reaching left of the image repeats its first column.
  const ramp = new Uint8Array(8).map((_, i) => i * 30);
  const out = resample(ramp, 8, 1, 1, { x: -4, y: 0, w: 8, h: 1 }, 8, 1);
  assert.deepEqual([...out], [0, 0, 0, 0, 0, 30, 60, 90]);
  // Enlarging a flat image keeps it flat.
  const flat = resample(
    new Uint8Array(3 * 4).fill(77),
    2,
    2,
    3,
    { x: 0, y: 0, w: 2, h: 2 },
    5,
    5,
  );
  assert.ok(flat.every((v) => v === 77));
});
