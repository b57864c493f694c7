import assert from "node:assert/strict";
import {
  readClockStamp,
  stampBlock,
  stampClock,
} from "../../../lib/render/clock_stamp.ts";

Deno.test("stampClock() writes a barcode readClockStamp() reads back", () => {
  const width = 384, height = 384;
  const frame = {
    width,
    height,
    data: new Uint8Array(width * height * 3 / 2).fill(90),
  };
  const ms = 1_795_312_081_581;
  stampClock(frame, ms);
  // The frame's top rows as RGBA (luma only: the chroma under the barcode is neutral).
  const rows = stampBlock(width);
  const rgba = new Uint8Array(width * rows * 4);
  for (let i = 0; i < width * rows; i++) {
    rgba.fill(frame.data[i], i * 4, i * 4 + 3);
  }
  assert.equal(readClockStamp(rgba, width), ms % 2 ** 32);
  // Below the barcode the frame is untouched.
  assert.equal(frame.data[rows * width], 90);
});
