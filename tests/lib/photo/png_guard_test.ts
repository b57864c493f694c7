import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import { encode as encodePng } from "fast-png";
import { decodePhoto, readPhotoHeader } from "../../../lib/photo/decode.ts";
import {
  ADAM7,
  guardPng,
  MAX_PNG_CHUNKS,
  pngDataBytes,
} from "../../../lib/photo/png_guard.ts";
import { PhotoRefusal } from "../../../lib/photo/refusal.ts";
import {
  pngChunk as chunk,
  pngIhdr as ihdr,
  pngIhdrOf as ihdrOf,
  pngOf as png,
} from "../../../fuzz/_images.ts";
import { refusedSync } from "./_helpers.ts";

Deno.test("decodePhoto() refuses a PNG whose data inflates past its pixels (a decompression bomb)", () => {
  // 64×64 RGB needs 12,352 bytes; these ~65 KiB inflate to 64 MiB (8 MiB would be 8 GiB).
  const bomb = png(
    ihdr(64),
    chunk("IDAT", deflateSync(new Uint8Array(64 << 20), { level: 9 })),
  );
  assert.ok(bomb.length < 128 * 1024);
  const before = Deno.memoryUsage().rss;
  assert.equal(refusedSync(() => decodePhoto(bomb)), "corrupted image");
  const grew = (Deno.memoryUsage().rss - before) / 2 ** 20;
  assert.ok(grew < 32, `RSS grew by ${grew.toFixed(0)} MiB`);
});

Deno.test("decodePhoto() refuses a second IHDR, an oversized palette and a PNG without IHDR first", () => {
  const rows = deflateSync(new Uint8Array(pngDataBytes(8, 8, 24, false)));
  assert.equal(
    refusedSync(() =>
      decodePhoto(png(ihdr(8), ihdr(4000), chunk("IDAT", rows)))
    ),
    "corrupted image",
  );
  const noHeaderFirst = png(
    chunk("tEXt", new Uint8Array([0x61, 0, 0x62])),
    ihdr(8),
  );
  // A palette of 3 MiB (fast-png would make a million arrays of it) is refused, though
  // the indexed 8×8 picture after it is whole.
  const indexed = new Uint8Array(13);
  new DataView(indexed.buffer).setUint32(0, 8);
  new DataView(indexed.buffer).setUint32(4, 8);
  indexed.set([8, 3, 0, 0, 0], 8);
  const indices = deflateSync(new Uint8Array(pngDataBytes(8, 8, 8, false)));
  const withPalette = (entries: number) =>
    png(
      chunk("IHDR", indexed),
      chunk("PLTE", new Uint8Array(3 * entries).fill(77)),
      chunk("IDAT", indices),
    );
  assert.equal(decodePhoto(withPalette(256)).data[0], 77);
  assert.equal(
    refusedSync(() => decodePhoto(withPalette(2 ** 20))),
    "corrupted image",
  );
  // readPhotoHeader reads IHDR at its fixed place: the guard refuses what follows.
  assert.throws(() => guardPng(noHeaderFirst), PhotoRefusal);
});

Deno.test("guardPng() drops an iCCP bomb and text chunks; the picture still decodes", () => {
  const data = new Uint8Array(16 * 16 * 3).fill(200);
  const plain = encodePng({
    width: 16,
    height: 16,
    data,
    channels: 3,
    depth: 8,
  });
  // Splice an iCCP chunk (a 64-MiB profile, deflated) and a tEXt chunk after IHDR.
  const profile = new Uint8Array([
    ...new TextEncoder().encode("icc"),
    0,
    0,
    ...deflateSync(new Uint8Array(64 << 20)),
  ]);
  const extra = [
    chunk("iCCP", profile),
    chunk("tEXt", new TextEncoder().encode("k\0v")),
  ];
  const head = plain.subarray(0, 33);
  const tail = plain.subarray(33);
  const withBomb = new Uint8Array([
    ...head,
    ...extra.flatMap((c) => [...c]),
    ...tail,
  ]);
  const guarded = guardPng(withBomb);
  assert.ok(guarded.length < 1024, "the iCCP and tEXt chunks are dropped");
  const image = decodePhoto(withBomb);
  assert.equal(image.width, 16);
  assert.deepEqual([...image.data.subarray(0, 3)], [200, 200, 200]);
});

Deno.test("decodePhoto() reads an Adam7-interlaced PNG (the bound counts each pass)", () => {
  const side = 13; // passes of uneven sizes, one of them empty in x for side < 5
  const raw = new Uint8Array(pngDataBytes(side, side, 24, true));
  // Filter byte 0 on every row; every sample 90 (the passes' layout does not matter).
  raw.fill(90);
  let at = 0;
  // Laid out by the guard's own table; fast-png reading the passes checks it.
  for (const [xs, ys, dx, dy] of ADAM7) {
    const w = Math.ceil((side - xs) / dx);
    const h = Math.ceil((side - ys) / dy);
    if (w <= 0 || h <= 0) continue;
    for (let y = 0; y < h; y++) {
      raw[at] = 0;
      at += 1 + w * 3;
    }
  }
  assert.equal(at, raw.length);
  const image = decodePhoto(
    png(ihdr(side, 1), chunk("IDAT", deflateSync(raw))),
  );
  assert.equal(image.width, side);
  assert.ok(image.data.every((v) => v === 90));
  // One byte more than the passes need is refused.
  const over = new Uint8Array(raw.length + 1);
  over.set(raw);
  assert.equal(
    refusedSync(() =>
      decodePhoto(png(ihdr(side, 1), chunk("IDAT", deflateSync(over))))
    ),
    "corrupted image",
  );
});

Deno.test("decodePhoto() refuses more than MAX_PNG_CHUNKS chunks and reads image data split into many", () => {
  const rows = deflateSync(new Uint8Array(pngDataBytes(16, 16, 24, false)));
  // The image data one byte per IDAT: joined before fast-png sees it.
  const split = Array.from(rows, (b) => chunk("IDAT", new Uint8Array([b])));
  assert.equal(decodePhoto(png(ihdr(16), ...split)).width, 16);
  // 100,000 empty IDATs in 1.2 MB (fast-png pays per chunk: 8 MiB of them, 10 s).
  const empty = chunk("IDAT", new Uint8Array());
  const many = png(
    ihdr(16),
    chunk("IDAT", rows),
    ...Array<Uint8Array>(100_000).fill(empty),
  );
  const t = performance.now();
  assert.equal(refusedSync(() => decodePhoto(many)), "corrupted image");
  assert.ok(performance.now() - t < 1_000);
  assert.ok(MAX_PNG_CHUNKS < 100_000);
});

Deno.test("readPhotoHeader() refuses an IHDR that PNG does not allow before sizing anything (the bit-depth bomb)", async (t) => {
  // Bit depth 255 of RGBA at 4096×4096 once bounded the image data at 2.14 GB: 64 MiB
  // of deflated zeros passed the bound, and 2 MiB of them took 2.3 GiB.
  const bomb = png(
    ihdrOf({ width: 4096, height: 4096, depth: 255, colour: 6 }),
    chunk("IDAT", deflateSync(new Uint8Array(64 << 20), { level: 9 })),
  );
  await t.step("the bomb, refused with no more than a header's memory", () => {
    assert.equal(refusedSync(() => readPhotoHeader(bomb)), "corrupted image");
    const before = Deno.memoryUsage().rss;
    assert.equal(refusedSync(() => decodePhoto(bomb)), "corrupted image");
    assert.equal(refusedSync(() => guardPng(bomb)), "corrupted image");
    const grew = (Deno.memoryUsage().rss - before) / 2 ** 20;
    assert.ok(grew < 32, `RSS grew by ${grew.toFixed(0)} MiB`);
  });
  const refused: Array<[string, Parameters<typeof ihdrOf>[0]]> = [
    ["greyscale of bit depth 3", { colour: 0, depth: 3 }],
    ["truecolour of bit depth 4", { colour: 2, depth: 4 }],
    ["indexed of bit depth 16", { colour: 3, depth: 16 }],
    ["greyscale with alpha of bit depth 1", { colour: 4, depth: 1 }],
    ["RGBA of bit depth 32", { colour: 6, depth: 32 }],
    ["colour type 1", { colour: 1, depth: 8 }],
    ["colour type 7", { colour: 7, depth: 8 }],
    ["compression method 1", { compression: 1 }],
    ["filter method 1", { filter: 1 }],
    ["interlace method 2", { interlace: 2 }],
    ["width 0", { width: 0 }],
    ["height 2³¹", { height: 2 ** 31 }],
  ];
  for (const [name, fields] of refused) {
    await t.step(name, () => {
      const rows = deflateSync(new Uint8Array(8 * 25));
      const bytes = png(ihdrOf(fields), chunk("IDAT", rows));
      assert.equal(
        refusedSync(() => readPhotoHeader(bytes)),
        "corrupted image",
      );
      assert.equal(refusedSync(() => guardPng(bytes)), "corrupted image");
    });
  }
  await t.step("every combination PNG allows passes the header", () => {
    const allowed: Record<number, number[]> = {
      0: [1, 2, 4, 8, 16],
      2: [8, 16],
      3: [1, 2, 4, 8],
      4: [8, 16],
      6: [8, 16],
    };
    for (const [colour, depths] of Object.entries(allowed)) {
      for (const depth of depths) {
        for (const interlace of [0, 1]) {
          const bytes = png(
            ihdrOf({ colour: Number(colour), depth, interlace }),
          );
          assert.equal(readPhotoHeader(bytes).width, 8);
        }
      }
    }
  });
});

Deno.test("guardPng() refuses image data that inflates to fewer bytes than the header's pixels", () => {
  const need = pngDataBytes(16, 16, 24, false);
  const ok = png(ihdr(16), chunk("IDAT", deflateSync(new Uint8Array(need))));
  assert.equal(decodePhoto(ok).width, 16);
  const short = png(
    ihdr(16),
    chunk("IDAT", deflateSync(new Uint8Array(need - 1))),
  );
  assert.equal(refusedSync(() => guardPng(short)), "corrupted image");
  assert.equal(refusedSync(() => decodePhoto(short)), "corrupted image");
});
