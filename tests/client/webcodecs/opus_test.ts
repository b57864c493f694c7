import assert from "node:assert/strict";
import { opusConfig } from "../../../client/webcodecs/opus.ts";

Deno.test("opusConfig() turns a dOps box into the OpusHead WebCodecs takes", () => {
  // dOps: version 0, 1 channel, pre-skip 312, 48 kHz input, gain -2, family 0 (BE).
  const dOps = Uint8Array.from([
    0,
    1,
    0x01,
    0x38,
    0x00,
    0x00,
    0xbb,
    0x80,
    0xff,
    0xfe,
    0,
  ]);
  const c = opusConfig(dOps);
  assert.equal(c.channels, 1);
  assert.equal(c.preSkip, 312);
  assert.deepEqual(
    [...c.head],
    [
      ...new TextEncoder().encode("OpusHead"),
      1, // version
      1, // channels
      0x38,
      0x01, // pre-skip, little-endian
      0x80,
      0xbb,
      0x00,
      0x00, // 48000, little-endian
      0xfe,
      0xff, // gain -2, little-endian
      0, // mapping family
    ],
  );
  assert.throws(() => opusConfig(dOps.subarray(0, 10)), /too short/);
  assert.throws(() => opusConfig(Uint8Array.from([1, ...dOps.subarray(1)])));
});
