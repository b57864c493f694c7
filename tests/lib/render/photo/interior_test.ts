/**
 * The open mouth's inside (lib/render/photo/interior.ts) is in shade: its chroma falls
 * with its light, as a shaded surface's does. It kept 40–80 % of the lip's chroma at
 * a tenth of its light, and the open O and U of a dark-skinned portrait were a flat,
 * saturated maroon.
 */
import assert from "node:assert/strict";
import { buildRig } from "../../../../lib/render/photo/rig.ts";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import { faceWith, mouthBox, paintOnce, smileAvatar } from "./_avatar.ts";

Deno.test("the dark inside of an open mouth has no more chroma than its light allows", async () => {
  const a = await smileAvatar();
  const lip = buildRig(a).lipTone;
  const lipChroma = Math.hypot(lip.u - 128, lip.v - 128);
  assert.ok(lipChroma > 8, `the fixture's lip has colour (${lipChroma})`);
  const p = createPhotoPainter(a, { bg: null, seed: 1 });
  for (const v of ["aa", "O"] as const) {
    const { state, weights } = faceWith({ [visemeIndex(v)]: 1 });
    const f = paintOnce(p, state, weights);
    const { x0, x1, y0, y1 } = mouthBox(a);
    const W = f.width, n = W * f.height, cw = W >> 1;
    let dark = 0, worst = 0;
    for (let y = y0; y < y1; y += 2) {
      for (let x = x0; x < x1; x += 2) {
        // A 2×2 block sharing one chroma sample, all of it dark.
        const ys = [0, 1, W, W + 1].map((d) => f.data[y * W + x + d]);
        const l = Math.max(...ys);
        if (l - 16 > 0.45 * (lip.y - 16)) continue;
        const c = (y >> 1) * cw + (x >> 1);
        const chroma = Math.hypot(
          f.data[n + c] - 128,
          f.data[n * 5 / 4 + c] - 128,
        );
        // The lip's chroma scaled by this block's share of the lip's light, up to
        // twice that (the wet inside is redder; a little light comes back off the
        // tongue), and a floor for rounding.
        const allowed = 2.2 * lipChroma * (l - 16) / (lip.y - 16) + 3;
        worst = Math.max(worst, chroma / allowed);
        dark++;
      }
    }
    assert.ok(dark >= 10, `${v}: ${dark} dark blocks in the opening`);
    assert.ok(
      worst <= 1,
      `${v}: chroma ${worst.toFixed(2)} × what its light allows`,
    );
  }
});
