import assert from "node:assert/strict";
import { refineMatte } from "../../../lib/photo/matte.ts";
import { decontaminate } from "../../../lib/render/photo/decontaminate.ts";
import { FACE_OVAL } from "../../../lib/render/photo/landmarks.ts";
import { testAvatar } from "../render/photo/_avatar.ts";

/** Sizes of the 4-connected parts of `alpha` ≥ 128, largest first. */
function parts(alpha: Uint8Array, w: number): number[] {
  const seen = new Uint8Array(alpha.length), sizes: number[] = [];
  for (let s = 0; s < alpha.length; s++) {
    if (seen[s] || alpha[s] < 128) continue;
    let n = 0;
    const stack = [s];
    seen[s] = 1;
    while (stack.length > 0) {
      const i = stack.pop()!, x = i % w;
      n++;
      for (
        const j of [x > 0 ? i - 1 : -1, x < w - 1 ? i + 1 : -1, i - w, i + w]
      ) {
        if (j < 0 || j >= alpha.length || seen[j] || alpha[j] < 128) continue;
        seen[j] = 1;
        stack.push(j);
      }
    }
    sizes.push(n);
  }
  return sizes.sort((a, b) => b - a);
}

Deno.test("a prepared portrait's person mask is one part, the one with the face", async () => {
  const a = await testAvatar();
  const sizes = parts(a.alpha, a.width);
  assert.equal(sizes.length, 1, `parts: ${sizes.slice(0, 6)}`);
  const i = Math.round(a.landmarks[4]) * a.width + Math.round(a.landmarks[3]);
  assert.equal(a.alpha[i], 255, "the nose is the person");
});

/** A 128² test photo: a skin-coloured head on green, its mask given by `alpha`. */
function scene() {
  const w = 128, h = 128, rgb = new Uint8Array(w * h * 3);
  const alpha = new Uint8Array(w * h);
  const lm = new Float32Array(478 * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      const head = Math.hypot(x - 50, y - 60) < 30;
      const ear = Math.hypot(x - 83, y - 60) < 7;
      const ghost = Math.hypot(x - 110, y - 20) < 9;
      rgb.set(head || ear ? [200, 150, 120] : [40, 160, 60], i * 3);
      // The model: the head, a translucent ear, a ghost in the background.
      alpha[i] = head ? 255 : ear ? 110 : ghost ? 200 : 0;
    }
  }
  FACE_OVAL.forEach((k, j) => {
    const t = j / FACE_OVAL.length * Math.PI * 2;
    lm[k * 3] = 50 + 22 * Math.sin(t);
    lm[k * 3 + 1] = 60 - 26 * Math.cos(t);
  });
  return { w, h, rgb, alpha, lm };
}

Deno.test("refineMatte() drops a ghost apart from the person and makes a faint ear solid", () => {
  const s = scene();
  const out = refineMatte(s.rgb, s.alpha, s.w, s.h, s.lm);
  assert.equal(out[20 * s.w + 110], 0, "the ghost is gone");
  assert.ok(out[60 * s.w + 83] >= 230, `the ear: ${out[60 * s.w + 83]}`);
  assert.ok(out[60 * s.w + 50] === 255, "the head");
  assert.ok(out[100 * s.w + 110] === 0, "the background");
});

Deno.test("decontaminate() gives the mask's edge the person's colour, not the old background's", () => {
  const w = 64, h = 64, n = w * h;
  const i420 = new Uint8Array(n * 3 / 2), alpha = new Uint8Array(n);
  // Person (luma 180, U 100, V 170) left of x = 32, background (luma 60, U 160, V 90)
  // right; the edge column a half-and-half mix, the mask 50 % there.
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const k = x < 32 ? 1 : x === 32 || x === 33 ? 0.5 : 0;
      i420[y * w + x] = Math.round(60 + 120 * k);
      alpha[y * w + x] = Math.round(255 * k);
    }
  }
  for (let y = 0; y < h / 2; y++) {
    for (let x = 0; x < w / 2; x++) {
      const k = x < 16 ? 1 : x === 16 ? 0.5 : 0;
      i420[n + y * 32 + x] = Math.round(160 - 60 * k);
      i420[n * 5 / 4 + y * 32 + x] = Math.round(90 + 80 * k);
    }
  }
  const out = decontaminate(i420, alpha, w, h);
  assert.equal(out[10 * w + 32], 180, "edge luma: the person's");
  assert.equal(out[n + 5 * 32 + 16], 100, "edge U: the person's");
  assert.equal(out[n * 5 / 4 + 5 * 32 + 16], 170, "edge V: the person's");
  assert.equal(out[10 * w + 10], 180, "inside kept");
  assert.equal(out[10 * w + 50], 60, "background kept");
});
