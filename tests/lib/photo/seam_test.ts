/**
 * The closed lips' spikes (lib/photo/seam.ts): a smile's dark tooth gaps, carried up
 * with a thin upper lip's edge and stretched by the closing warp, stood over the rest
 * face's lip as narrow dark streaks; they are filled from the skin around them, and a
 * moustache's hair over the lip is left as it is.
 */
import assert from "node:assert/strict";
import { clearSpikes } from "../../../lib/photo/seam.ts";
import {
  LIP_INNER_UPPER,
  LIP_OUTER_UPPER,
} from "../../../lib/render/photo/landmarks.ts";

const W = 128, H = 96;
/** Outer upper lip at row 50, the closed seam at row 56, from x 24 to 104. */
function lips(): Float32Array {
  const lm = new Float32Array(478 * 3);
  LIP_OUTER_UPPER.forEach((i, k) => {
    lm[i * 3] = 24 + k * 8, lm[i * 3 + 1] = 50;
  });
  LIP_INNER_UPPER.forEach((i, k) => {
    lm[i * 3] = 24 + k * 8, lm[i * 3 + 1] = 56;
  });
  return lm;
}

/** A flat skin picture (luma 170, a little noise), its chroma neutral-warm. */
function skin(seed = 1): Uint8Array {
  const img = new Uint8Array(W * H * 3 / 2);
  let s = seed;
  for (let i = 0; i < W * H; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    img[i] = 170 + ((s >>> 16) % 5) - 2;
  }
  img.fill(120, W * H, W * H * 5 / 4);
  img.fill(150, W * H * 5 / 4);
  return img;
}

Deno.test("clearSpikes() fills narrow dark streaks standing over the closed upper lip", () => {
  const img = skin();
  // Spikes 2 px wide, 9 px tall, rising from the seam, every 12 px.
  const spikes = [40, 52, 64, 76, 88];
  for (const x of spikes) {
    for (let y = 47; y < 56; y++) img[y * W + x] = img[y * W + x + 1] = 90;
  }
  clearSpikes(img, W, H, lips(), 4);
  for (const x of spikes) {
    for (let y = 47; y < 56; y++) {
      assert.ok(img[y * W + x] > 150, `(${x}, ${y}) at ${img[y * W + x]}`);
    }
  }
});

Deno.test("clearSpikes() fills a wedge of a smile's dark corner up to 9 px wide", () => {
  // The dark between the end of a smile's teeth row and its corner, carried up with
  // the lip: 3 px wide at its tip, 8 px at the seam (Biden's 2013 portrait).
  const img = skin();
  for (let y = 44; y < 56; y++) {
    const half = 1.5 + 2.5 * (y - 44) / 11;
    for (let x = Math.round(70 - half); x < Math.round(70 + half); x++) {
      img[y * W + x] = 115;
    }
  }
  clearSpikes(img, W, H, lips(), 4);
  for (let y = 44; y < 56; y++) {
    for (let x = 64; x < 76; x++) {
      assert.ok(img[y * W + x] > 150, `(${x}, ${y}) at ${img[y * W + x]}`);
    }
  }
});

Deno.test("clearSpikes() leaves a shade wider than a spike, and its edges", () => {
  const img = skin();
  // A fold's shade 16 px wide over the lip.
  for (let y = 44; y < 56; y++) {
    for (let x = 60; x < 76; x++) img[y * W + x] = 120;
  }
  const before = img.slice();
  clearSpikes(img, W, H, lips(), 4);
  let changed = 0;
  for (let i = 0; i < W * H; i++) if (img[i] !== before[i]) changed++;
  assert.equal(changed, 0);
});

Deno.test("clearSpikes() leaves a moustache's hair over the lip", () => {
  const img = skin();
  // Hair: light and dark strands, every pixel of the band different.
  let s = 7;
  for (let y = 40; y < 56; y++) {
    for (let x = 20; x < 108; x++) {
      s = (s * 1103515245 + 12345) >>> 0;
      img[y * W + x] = 60 + ((s >>> 16) % 120);
    }
  }
  const before = img.slice();
  clearSpikes(img, W, H, lips(), 4);
  // A strand that happens to stand among even ones may go; the hair stays.
  let changed = 0;
  for (let i = 0; i < W * H; i++) if (img[i] !== before[i]) changed++;
  assert.ok(changed <= 0.01 * 16 * 88, `${changed} pixels of the hair changed`);
});
