/**
 * The JPEG walk before jpeg-js (issue 29): no scan may hide from the count behind a
 * segment whose declared length disagrees with what jpeg-js reads, and real JPEGs pass.
 */
import assert from "node:assert/strict";
import jpeg from "jpeg-js";
import {
  decodePhoto,
  MAX_JPEG_SCANS,
  readPhotoHeader,
} from "../../../lib/photo/decode.ts";
import { readJpegLayout } from "../../../lib/photo/jpeg_layout.ts";
import {
  eatenMarkerJpeg,
  hiddenScansJpeg,
  progressiveJpeg,
  withJpegSegment,
} from "../../../fuzz/_images.ts";
import { fixtureBytes, refusedSync } from "./_helpers.ts";

/** jpeg-js's own reading of `bytes` (null when it refuses them). */
function jpegJs(bytes: Uint8Array): { width: number } | null {
  try {
    return jpeg.decode(bytes, { useTArray: true, tolerantDecoding: false });
  } catch {
    return null;
  }
}

Deno.test("readPhotoHeader() refuses scans hidden behind a false end of image or an eaten marker", async (t) => {
  for (
    const [name, make] of [["DQT of length 3", hiddenScansJpeg], [
      "comment ending in 0xFF",
      eatenMarkerJpeg,
    ]] as const
  ) {
    await t.step(name, () => {
      // jpeg-js reads the small one whole, every scan: the shape is real.
      assert.equal(jpegJs(make(64, 5))?.width, 64);
      // 2,000 scans of 4096×4096 that a length-trusting count saw none of.
      const bomb = make(4096, 2_000);
      assert.ok(bomb.length < 128 * 1024);
      assert.equal(
        refusedSync(() => readPhotoHeader(bomb)),
        "corrupted image",
      );
      assert.equal(refusedSync(() => decodePhoto(bomb)), "corrupted image");
    });
  }
});

Deno.test("readPhotoHeader() refuses a JPEG segment whose length differs from its fields", async (t) => {
  const base = progressiveJpeg(64, 3);
  const table = new Array(64).fill(1);
  const cases: Array<[string, Uint8Array]> = [
    [
      "DQT longer than its table",
      withJpegSegment(base, 0xdb, 69, [0, ...table, 0]),
    ],
    [
      "DQT of a 16-bit table declaring 8-bit's length",
      withJpegSegment(base, 0xdb, 67, [0x10, ...table]),
    ],
    ["DQT of precision 2", withJpegSegment(base, 0xdb, 67, [0x20, ...table])],
    ["DQT of table 4", withJpegSegment(base, 0xdb, 67, [0x04, ...table])],
    ["empty DQT", withJpegSegment(base, 0xdb, 2, [])],
    [
      "DHT shorter than its symbols",
      withJpegSegment(base, 0xc4, 20, [0x00, 2, ...new Array(15).fill(0), 0]),
    ],
    [
      "DHT of class 2",
      withJpegSegment(base, 0xc4, 20, [0x20, 1, ...new Array(15).fill(0), 0]),
    ],
    ["DRI of length 5", withJpegSegment(base, 0xdd, 5, [0, 1, 0])],
    ["APP0 of length 1", withJpegSegment(base, 0xe0, 1, [])],
    ["a stuffed 0x00 between segments", withJpegSegment(base, 0x00, 4, [0, 0])],
    ["RST0 between segments", withJpegSegment(base, 0xd0, 4, [0, 0])],
    [
      "a lossless frame header (SOF3)",
      withJpegSegment(base, 0xc3, 11, [8, 0, 64, 0, 64, 1, 1, 0x11, 0]),
    ],
  ];
  // The frame header (SOF2 at 71) and first scan header (SOS after both DHTs).
  const sof = 71, sos = 71 + 13 + 2 * 22;
  const patched = (at: number, bytes: number[]) => {
    const b = base.slice();
    b.set(bytes, at);
    return b;
  };
  assert.deepEqual([base[sof + 1], base[sos + 1]], [0xc2, 0xda]);
  cases.push(
    ["SOF declaring more than its component", patched(sof + 3, [14])],
    ["SOF of 12-bit samples", patched(sof + 4, [12])],
    ["SOF of sampling factor 0", patched(sof + 11, [0x01])],
    ["SOS declaring more than its component", patched(sos + 3, [10])],
    ["SOS naming a component the frame lacks", patched(sos + 5, [7])],
    [
      "a second frame header",
      withJpegSegment(base.subarray(0), 0xc0, 11, [
        8,
        0,
        64,
        0,
        64,
        1,
        1,
        0x11,
        0,
      ]),
    ],
  );
  for (const [name, bytes] of cases) {
    await t.step(name, () => {
      assert.equal(
        refusedSync(() => readPhotoHeader(bytes)),
        "corrupted image",
      );
    });
  }
});

Deno.test("readJpegLayout() reads real JPEGs as jpeg-js does: size, scans", () => {
  const hopper = fixtureBytes("grace_hopper.jpg");
  const layout = readJpegLayout(hopper, MAX_JPEG_SCANS);
  assert.deepEqual([layout.width, layout.height], [512, 600]);
  assert.ok(layout.scans >= 1);
  assert.equal(readJpegLayout(progressiveJpeg(64, 7), 100).scans, 8);
  // Counting stops one past the limit.
  assert.equal(readJpegLayout(progressiveJpeg(64, 20), 5).scans, 6);
  // jpeg-js's own output, baseline with a restart interval and 4:2:0 chroma.
  const side = 40;
  const rgba = new Uint8Array(side * side * 4).fill(90);
  const encoded = jpeg.encode({ width: side, height: side, data: rgba }, 75);
  assert.equal(readJpegLayout(encoded.data, 100).scans, 1);
  assert.equal(decodePhoto(encoded.data).width, side);
  // A file cut inside its scan stops the walk; jpeg-js refuses it whole.
  const cut = hopper.subarray(0, 20_000);
  assert.equal(readJpegLayout(cut, MAX_JPEG_SCANS).width, 512);
  assert.equal(refusedSync(() => decodePhoto(cut)), "corrupted image");
});
