/**
 * Which decoded frame is drawn on the heard clock (client/webcodecs/frames.ts): the
 * first of a stream at once; then each one frame before its time, the newest due.
 */
import assert from "node:assert/strict";
import { dueFrame } from "../../../client/webcodecs/frames.ts";

/** Frames of 40 ms from `startUs` (only what `dueFrame` reads). */
function frames(startUs: number, n: number): VideoFrame[] {
  return Array.from(
    { length: n },
    (_, i) => ({ timestamp: startUs + i * 40_000, duration: 40_000 }),
  ) as unknown as VideoFrame[];
}

Deno.test("dueFrame(): a frame is due one frame before the heard clock reaches it", () => {
  const f = frames(400_000, 3); // 400, 440, 480 ms
  assert.equal(dueFrame(f, 359_999, false, true), -1);
  assert.equal(dueFrame(f, 360_000, false, true), 0, "400 ms at 360 ms heard");
  assert.equal(dueFrame(f, 400_000, false, true), 1);
  assert.equal(dueFrame(f, 1_000_000, false, true), 2, "the newest due");
});

Deno.test("dueFrame(): the first frame at once; without a clock the newest, or none while audio runs", () => {
  const f = frames(400_000, 3);
  assert.equal(dueFrame(f, 0, true, true), 0);
  assert.equal(dueFrame(f, null, false, false), 2);
  assert.equal(dueFrame(f, null, false, true), -1);
  assert.equal(dueFrame([], 1e9, false, true), -1);
});
