import assert from "node:assert/strict";
import jpeg from "jpeg-js";
import { encode as encodePng } from "fast-png";
import {
  decodePhoto,
  MAX_JPEG_SCANS,
  orient,
  readPhotoHeader,
} from "../../../lib/photo/decode.ts";
import { fixture, fixtureBytes, refusedSync } from "./_helpers.ts";
import { deflateSync } from "node:zlib";
import {
  pngChunk,
  pngIhdrOf,
  pngOf,
  progressiveJpeg,
} from "../../../fuzz/_images.ts";

/** A PNG signature and IHDR (8-bit RGB) claiming `width`×`height`, no pixel data after it. */
function pngHeaderOnly(width: number, height: number): Uint8Array {
  const b = new Uint8Array(33);
  b.set([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    0,
    0,
    0,
    13,
    73,
    72,
    68,
    82,
  ]);
  const v = new DataView(b.buffer);
  v.setUint32(16, width);
  v.setUint32(20, height);
  b.set([8, 2], 24); // bit depth, colour type
  return b;
}

function greyPng(side: number, value: number): Uint8Array {
  const data = new Uint8Array(side * side * 3).fill(value);
  return encodePng({ width: side, height: side, data, channels: 3, depth: 8 });
}

/** `bytes` (a JPEG) with an APP1 Exif segment holding `orientation` after SOI. */
function withExifOrientation(
  bytes: Uint8Array,
  orientation: number,
): Uint8Array {
  const tiff = [
    0x4d,
    0x4d,
    0,
    42,
    0,
    0,
    0,
    8,
    0,
    1,
    0x01,
    0x12,
    0,
    3,
    0,
    0,
    0,
    1,
    0,
    orientation,
    0,
    0,
    0,
    0,
    0,
    0,
  ];
  const body = [...new TextEncoder().encode("Exif\0\0"), ...tiff];
  const app1 = [
    0xff,
    0xe1,
    (body.length + 2) >> 8,
    (body.length + 2) & 255,
    ...body,
  ];
  return new Uint8Array([
    ...bytes.subarray(0, 2),
    ...app1,
    ...bytes.subarray(2),
  ]);
}

Deno.test("readPhotoHeader() refuses before decoding: size, magic bytes, sides", async (t) => {
  await t.step("8 MiB + 1 byte, even a JPEG", () => {
    const big = new Uint8Array(8 * 1024 * 1024 + 1);
    big.set(fixtureBytes("grace_hopper.jpg"));
    assert.equal(refusedSync(() => readPhotoHeader(big)), "larger than 8 MiB");
  });
  await t.step("a GIF", () => {
    assert.equal(
      refusedSync(() =>
        readPhotoHeader(new TextEncoder().encode("GIF89a...."))
      ),
      "not a JPEG or PNG",
    );
  });
  await t.step("a PNG claiming 5000 px (no pixel data needed)", () => {
    assert.equal(
      refusedSync(() => readPhotoHeader(pngHeaderOnly(5000, 100))),
      "larger than 4096 px",
    );
    assert.deepEqual(readPhotoHeader(pngHeaderOnly(4096, 100)), {
      format: "png",
      width: 4096,
      height: 100,
      orientation: 1,
    });
  });
  await t.step("a JPEG whose frame header says 4097 px high", () => {
    const bytes = fixtureBytes("grace_hopper.jpg").slice();
    const h = readPhotoHeader(bytes);
    assert.deepEqual([h.format, h.width, h.height], ["jpeg", 512, 600]);
    // Find the SOF0/SOF2 marker and patch its height.
    let sof = -1;
    for (let i = 2; i < bytes.length - 1; i++) {
      if (
        bytes[i] === 0xff && (bytes[i + 1] === 0xc0 || bytes[i + 1] === 0xc2)
      ) {
        sof = i;
        break;
      }
    }
    new DataView(bytes.buffer).setUint16(sof + 5, 4097);
    assert.equal(
      refusedSync(() => readPhotoHeader(bytes)),
      "larger than 4096 px",
    );
  });
  await t.step("a JPEG with no frame header", () => {
    assert.equal(
      refusedSync(() =>
        readPhotoHeader(new Uint8Array([0xff, 0xd8, 0xff, 0xd9]))
      ),
      "corrupted image",
    );
  });
});

Deno.test("decodePhoto() refuses damaged pixel data as a corrupted image", async (t) => {
  await t.step("a PNG cut short", () => {
    const full = greyPng(64, 90);
    assert.equal(
      refusedSync(() => decodePhoto(full.slice(0, full.length - 20))),
      "corrupted image",
    );
  });
  await t.step("a PNG with a flipped bit (CRC)", () => {
    const bad = greyPng(8, 7).slice();
    bad[40] ^= 1;
    assert.equal(refusedSync(() => decodePhoto(bad)), "corrupted image");
  });
  await t.step("a JPEG cut in its scan", () => {
    assert.equal(
      refusedSync(() =>
        decodePhoto(fixtureBytes("grace_hopper.jpg").slice(0, 30_000))
      ),
      "corrupted image",
    );
  });
});

Deno.test("decodePhoto() turns a JPEG upright by its EXIF orientation", async (t) => {
  const upright = fixture("grace_hopper.jpg");
  // Stored as a camera held sideways would: the upright picture turned 90° counter-clockwise.
  const stored = orient(upright, 8);
  assert.deepEqual([stored.width, stored.height], [600, 512]);
  const rgba = new Uint8Array(stored.width * stored.height * 4);
  for (let i = 0; i < stored.width * stored.height; i++) {
    rgba.set([...stored.data.subarray(i * 3, i * 3 + 3), 255], i * 4);
  }
  const encoded =
    jpeg.encode({ width: stored.width, height: stored.height, data: rgba }, 95)
      .data;
  for (const [o, w, h] of [[1, 600, 512], [6, 512, 600]]) {
    await t.step(`orientation ${o}`, () => {
      const out = decodePhoto(withExifOrientation(encoded, o));
      assert.deepEqual([out.width, out.height], [w, h]);
      if (o !== 6) return;
      let diff = 0;
      for (let i = 0; i < out.data.length; i++) {
        diff += Math.abs(out.data[i] - upright.data[i]);
      }
      assert.ok(
        diff / out.data.length < 4,
        `mean difference ${diff / out.data.length}`,
      );
    });
  }
});

Deno.test("decodePhoto() reads PNGs with alpha over white, 16-bit and 1- to 4-bit grey and palettes", async (t) => {
  await t.step("RGBA: transparent is white, opaque keeps its colour", () => {
    const data = new Uint8Array([255, 0, 0, 0, 0, 0, 255, 255]);
    const out = decodePhoto(
      encodePng({ width: 2, height: 1, data, channels: 4, depth: 8 }),
    );
    assert.deepEqual([...out.data], [255, 255, 255, 0, 0, 255]);
  });
  await t.step("16-bit grey", () => {
    const data = new Uint16Array([0x8000, 0xffff]);
    const out = decodePhoto(
      encodePng({ width: 2, height: 1, data, channels: 1, depth: 16 }),
    );
    assert.deepEqual([...out.data], [128, 128, 128, 255, 255, 255]);
  });
  await t.step("indexed colour", () => {
    const out = decodePhoto(
      encodePng({
        width: 2,
        height: 1,
        data: new Uint8Array([1, 0]),
        channels: 1,
        depth: 8,
        palette: [[10, 20, 30], [40, 50, 60]],
      }),
    );
    assert.deepEqual([...out.data], [40, 50, 60, 10, 20, 30]);
  });
  await t.step("1-, 2- and 4-bit grey (packed samples)", () => {
    const cases: Array<[number, number[], number[]]> = [
      [1, [0b10110000], [255, 0, 255, 255]],
      [2, [0b00011011], [0, 85, 170, 255]],
      [4, [0x0f, 0x80], [0, 255, 136, 0]],
    ];
    for (const [depth, row, grey] of cases) {
      const bytes = pngOf(
        pngIhdrOf({ width: 4, height: 1, depth, colour: 0 }),
        pngChunk("IDAT", deflateSync(new Uint8Array([0, ...row]))),
      );
      const out = decodePhoto(bytes);
      assert.deepEqual(
        [...out.data],
        grey.flatMap((g) => [g, g, g]),
        `${depth} bit`,
      );
    }
  });
});

Deno.test("decodePhoto() decodes a JPEG of the largest accepted size, 4096×4096", () => {
  const side = 4096;
  const rgba = new Uint8Array(side * side * 4).fill(180);
  const bytes = jpeg.encode({ width: side, height: side, data: rgba }, 50).data;
  const out = decodePhoto(bytes);
  assert.deepEqual([out.width, out.height], [side, side]);
  assert.ok(Math.abs(out.data[out.data.length - 1] - 180) <= 2);
});

Deno.test("decodePhoto() refuses a JPEG of more scans than MAX_JPEG_SCANS before decoding it", () => {
  const ok = decodePhoto(progressiveJpeg(64, MAX_JPEG_SCANS - 1));
  assert.equal(ok.width, 64);
  assert.ok(ok.data.every((v) => v === 128), "mid-grey");
  // 2,000 scans of 4096×4096 in under 128 KiB: jpeg-js would walk 262,144 blocks per scan,
  // about 3 s of the event loop (8 MiB of them, over 5 minutes).
  const bomb = progressiveJpeg(4096, 2_000);
  assert.ok(bomb.length < 128 * 1024);
  const t = performance.now();
  assert.equal(refusedSync(() => readPhotoHeader(bomb)), "corrupted image");
  assert.equal(refusedSync(() => decodePhoto(bomb)), "corrupted image");
  assert.ok(performance.now() - t < 1_000);
});
