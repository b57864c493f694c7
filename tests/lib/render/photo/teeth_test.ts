/**
 * The photo's teeth row (lib/render/photo/teeth.ts): its biting edge has no notch
 * narrower than a tooth. A shaded line that stopped six columns' scan a few pixels
 * under the lip drew, on every open vowel, a dark gap as if a tooth were missing.
 */
import assert from "node:assert/strict";
import {
  closeNotches,
  photoTeeth,
} from "../../../../lib/render/photo/teeth.ts";
import type { TeethLayer } from "../../../../lib/render/photo/types.ts";

/** A 60×20 teeth layer: lip above row 4, teeth rows 4–15, mouth below. */
function layer(shadeCols: [number, number] | null): TeethLayer {
  const w = 60, h = 20;
  const i420 = new Uint8Array(w * h * 3 / 2).fill(128);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let l = y < 4 ? 120 : y < 16 ? 220 : 40;
      // A shaded line across the teeth at row 7, in some columns.
      if (shadeCols && x >= shadeCols[0] && x < shadeCols[1] && y === 7) {
        l = 120;
      }
      i420[y * w + x] = l;
    }
  }
  const upper = new Float32Array(22), lower = new Float32Array(22);
  for (let k = 0; k < 11; k++) {
    upper[2 * k] = lower[2 * k] = 5 + k * 5;
    upper[2 * k + 1] = 4;
    lower[2 * k + 1] = 18;
  }
  return { x: 0, y: 0, w, h, i420, upper, lower };
}

Deno.test("photoTeeth(): a shaded line across six columns of teeth leaves no notch in the row", () => {
  const whole = photoTeeth(layer(null), 200, 180)!;
  const shaded = photoTeeth(layer([25, 31]), 200, 180)!;
  assert.ok(whole && shaded);
  const height = (t: typeof whole, x: number) =>
    t.edge[x - t.x0] - t.top[x - t.x0];
  assert.ok(height(whole, 28) >= 10, `row ${height(whole, 28)} px tall`);
  assert.equal(height(shaded, 28), height(whole, 28));
});

Deno.test("closeNotches() raises drops narrower than a tooth, not the row's ends", () => {
  const top = new Float32Array(30);
  const edge = Float32Array.from(
    { length: 30 },
    (_, c) => c < 5 || c > 24 ? 0 : c >= 12 && c < 18 ? 3 : 12,
  );
  closeNotches(top, edge);
  for (let c = 5; c <= 24; c++) assert.equal(edge[c], 12, `column ${c}`);
  for (const c of [0, 4, 25, 29]) assert.equal(edge[c], 0, `column ${c}`);
});
