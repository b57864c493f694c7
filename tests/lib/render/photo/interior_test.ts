/**
 * The open mouth's inside (lib/render/photo/interior.ts) is in shade: its chroma falls
 * with its light, as a shaded surface's does. It kept 40–80 % of the lip's chroma at
 * a tenth of its light, and the open O and U of a dark-skinned portrait were a flat,
 * saturated maroon. Drawn teeth, where the photo shows none, are a pale ivory (not khaki).
 */
import assert from "node:assert/strict";
import { buildRig } from "../../../../lib/render/photo/rig.ts";
import { createPose, posePoints } from "../../../../lib/render/photo/pose.ts";
import { line } from "../../../../lib/render/photo/lens.ts";
import { polylineY } from "../../../../lib/render/photo/geometry.ts";
import {
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
} from "../../../../lib/render/photo/landmarks.ts";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import {
  faceWith,
  mouthBox,
  paintOnce,
  smileAvatar,
  testAvatar,
} from "./_avatar.ts";

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

Deno.test("drawn teeth, on a portrait that shows none, are a pale ivory, less saturated than the skin (not khaki)", async () => {
  const a = await testAvatar();
  const rig = buildRig(a);
  assert.equal(rig.photoTeeth, null, "the fixture shows no teeth");
  const { skin, lipTone: lip } = rig;
  const skinSat = Math.hypot(skin.u - 128, skin.v - 128) / (skin.y - 16);
  const W = a.width, n = W * a.height, cw = W >> 1;
  const pose = createPose(rig);
  for (const v of ["DD", "E", "I"] as const) {
    const { state, weights } = faceWith({ [visemeIndex(v)]: 1 });
    // A fresh painter paints its first frame with the head as posed here.
    const f =
      paintOnce(createPhotoPainter(a, { bg: null, seed: 1 }), state, weights)
        .data;
    posePoints(rig, state, 0, 0.08 * (1 - weights[0]), pose);
    const up = line(LIP_INNER_UPPER, pose.x, pose.y);
    const lo = line(LIP_INNER_LOWER, pose.x, pose.y);
    // The teeth: 2×2 blocks well inside the opening, lighter than half the lip's
    // light (the cavity around them is darker).
    let blocks = 0, luma = 0, sat = 0;
    for (let x = Math.ceil(up.x[0]) & ~1; x < up.x[up.x.length - 1]; x += 2) {
      const yu = polylineY(up.x, up.y, x + 1),
        yl = polylineY(lo.x, lo.y, x + 1);
      for (let y = Math.ceil(yu + 1) & ~1; y + 2 < yl - 1; y += 2) {
        const at = [0, 1, W, W + 1].map((d) => y * W + x + d);
        const m = at.reduce((s, i) => s + f[i], 0) / 4;
        if (Math.min(...at.map((i) => f[i])) - 16 < 0.5 * (lip.y - 16)) {
          continue;
        }
        const c = (y >> 1) * cw + (x >> 1);
        luma += m;
        sat += Math.hypot(f[n + c] - 128, f[n * 5 / 4 + c] - 128) / (m - 16);
        blocks++;
      }
    }
    assert.ok(blocks >= 40, `${v}: ${blocks} blocks of teeth`);
    // (Before: 0.78–0.88 of the skin's saturation at a little less light: khaki,
    // grey-green at tile size beside a ruddy face.)
    const rel = sat / blocks / skinSat;
    assert.ok(rel <= 0.72, `${v}: ${rel.toFixed(2)} of the skin's saturation`);
    assert.ok(
      luma / blocks >= 0.8 * lip.y,
      `${v}: teeth at luma ${(luma / blocks).toFixed(0)}, the lip ${
        lip.y.toFixed(0)
      }`,
    );
  }
});
