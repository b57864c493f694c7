/**
 * How lib/photo/lips.ts tells lip from the mouth's inside, pixel by pixel: a pale lip
 * is about as light as a tooth in shade, so light and the nearest tone alone took such
 * a tooth for lip (the lips of a broad smile then closed over the shaded teeth, which
 * stayed between them); without the lip's colour it is no lip.
 */
import assert from "node:assert/strict";
import { inside, lipColour, type Tones } from "../../../lib/photo/lips.ts";

/** A 4×4 picture of one colour (Y, U, V). */
function flat(y: number, u: number, v: number) {
  const i420 = new Uint8Array(16 + 8);
  i420.fill(y, 0, 16);
  i420.fill(u, 16, 20);
  i420.fill(v, 20, 24);
  return { width: 4, height: 4, i420, landmarks: new Float32Array(0) };
}

/** A pale pink lip, ivory teeth (the tones `tonesOf` read off one such smile). */
const PALE: Tones = {
  upper: [150, 118, 150],
  lip: [172, 119, 152],
  teeth: [212, 125, 131],
  dark: 80,
};

Deno.test("lipColour() measures a pixel's share of the lip's own colour", () => {
  assert.equal(lipColour([150, 119, 152], PALE.lip), 1);
  assert.ok(lipColour([150, 128, 128], PALE.lip) < 0.05, "grey");
  assert.ok(lipColour(PALE.teeth, PALE.lip) < 0.45, "ivory");
  // A lip with little colour of its own tells nothing by chroma.
  assert.equal(lipColour([150, 128, 128], [150, 126, 131]), 1);
});

Deno.test("inside(): a tooth in shade beside a pale lip is the mouth's inside; the lip is not", () => {
  // Shaded ivory: nearer the lip's light than the teeth's, and nearer its tone.
  const shaded = flat(165, 126, 133);
  assert.ok(inside(shaded, 1, 1, PALE), "a shaded tooth");
  assert.ok(!inside(flat(170, 119, 151), 1, 1, PALE), "the lip");
  assert.ok(!inside(flat(120, 117, 150), 1, 1, PALE), "the lip in shade");
  assert.ok(inside(flat(60, 125, 140), 1, 1, PALE), "dark");
});
