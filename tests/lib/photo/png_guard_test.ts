import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import { encode as encodePng } from "fast-png";
import { decodePhoto } from "../../../lib/photo/decode.ts";
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
