/**
 * The harmonic fill of lib/photo/inpaint.ts: a masked hole takes the smoothest surface
 * meeting its border (a linear ramp comes back as the ramp, a hole in a flat plane as
 * the plane), and nothing outside the mask changes.
 */
import assert from "node:assert/strict";
import { inpaint } from "../../../lib/photo/inpaint.ts";

Deno.test("inpaint() fills a hole in a ramp with the ramp and touches nothing else", () => {
  const w = 40, h = 30, off = 7;
  const plane = new Uint8Array(off + w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) plane[off + y * w + x] = 40 + 3 * x + 2 * y;
  }
  const want = plane.slice();
  const box = { x: 10, y: 8, w: 16, h: 12 };
  const mask = new Uint8Array(box.w * box.h);
  // A ragged hole: each column's run starts and ends elsewhere (streaks, filled one
  // column at a time from wrong ends).
  for (let c = 2; c < 14; c++) {
    for (let r = 2 + (c % 3); r < 10 - (c % 2); r++) {
      mask[r * box.w + c] = 1;
      plane[off + (box.y + r) * w + box.x + c] = c % 2 ? 255 : 0;
    }
  }
  plane[0] = 99; // before `offset`: another plane's
  inpaint(plane, off, w, h, box, mask);
  assert.equal(plane[0], 99);
  for (let i = 0; i < w * h; i++) {
    assert.ok(
      Math.abs(plane[off + i] - want[off + i]) <= 1,
      `pixel ${i % w},${Math.floor(i / w)}: ${plane[off + i]}, want ${
        want[off + i]
      }`,
    );
  }
});

Deno.test("inpaint() with nothing masked changes nothing; a box past the plane's edge is clipped", () => {
  const plane = Uint8Array.from({ length: 64 }, (_, i) => i * 3);
  const before = plane.slice();
  inpaint(plane, 0, 8, 8, { x: 0, y: 0, w: 8, h: 8 }, new Uint8Array(64));
  assert.deepEqual(plane, before);
  const mask = new Uint8Array(16).fill(1);
  inpaint(plane, 0, 8, 8, { x: 6, y: 6, w: 4, h: 4 }, mask);
  assert.deepEqual(plane.subarray(0, 48), before.subarray(0, 48));
});
