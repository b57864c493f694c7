import assert from "node:assert/strict";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import {
  insidePolygon,
  polylineY,
} from "../../../../lib/render/photo/geometry.ts";
import {
  LIP_INNER_UPPER,
  LIP_OUTER_LOWER,
  LIP_OUTER_UPPER,
} from "../../../../lib/render/photo/landmarks.ts";
import type { PhotoAvatar } from "../../../../lib/render/photo/types.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import { restMouth, tooOpen } from "../../../../lib/photo/mouth.ts";
import { photoModels } from "../../../../lib/photo/models.ts";
import { i420ToRgb } from "../../../../lib/photo/preview.ts";
import {
  faceWith,
  paintOnce,
  point,
  smileAvatar,
  testAvatar,
} from "./_avatar.ts";

/** The astronaut portrait, smiling with her upper teeth (tests/fixtures/photo/). */
const smile = await smileAvatar();
const PP = visemeIndex("PP"), AA = visemeIndex("aa");

/**
 * Pixels of `luma` inside `a`'s outer lip contour that look like teeth: brighter than
 * the photo's skin under the eyes, where lips are darker than skin.
 */
function teethInLips(a: PhotoAvatar, f: Uint8Array): number {
  const xs = [...LIP_OUTER_UPPER, ...[...LIP_OUTER_LOWER].reverse()].map((i) =>
    point(a, i)[0]
  );
  const ys = [...LIP_OUTER_UPPER, ...[...LIP_OUTER_LOWER].reverse()].map((i) =>
    point(a, i)[1]
  );
  const w = a.width, n = w * a.height;
  const [sx, sy] = point(a, 118);
  const skin = f[Math.round(sy + 4) * w + Math.round(sx)];
  let count = 0;
  for (let y = Math.floor(Math.min(...ys)); y < Math.max(...ys); y++) {
    for (let x = Math.floor(Math.min(...xs)); x < Math.max(...xs); x++) {
      if (!insidePolygon(xs, ys, x + 0.5, y + 0.5)) continue;
      const c = (y >> 1) * (w >> 1) + (x >> 1);
      const chroma = Math.abs(f[n + c] - 128) +
        Math.abs(f[n * 5 / 4 + c] - 128);
      if (f[y * w + x] > skin + 10 && chroma < 30) count++;
    }
  }
  return count;
}

/**
 * Mean luma change from column to column and from row to row in the band of ±4 px
 * around where the rest face's lips meet (its inner upper contour).
 */
function seamRoughness(a: PhotoAvatar): { horiz: number; vert: number } {
  const xs = LIP_INNER_UPPER.map((i) => point(a, i)[0]);
  const ys = LIP_INNER_UPPER.map((i) => point(a, i)[1]);
  const ox = LIP_OUTER_UPPER.map((i) => point(a, i)[0]);
  const w = a.width, y = a.i420;
  let h = 0, v = 0, n = 0;
  for (let X = Math.ceil(ox[0]); X < Math.floor(ox[ox.length - 1]) - 1; X++) {
    const yc = polylineY(xs, ys, X);
    for (let Y = Math.round(yc - 4); Y <= yc + 4; Y++) {
      h += Math.abs(y[Y * w + X + 1] - y[Y * w + X]);
      v += Math.abs(y[(Y + 1) * w + X] - y[Y * w + X]);
      n++;
    }
  }
  return { horiz: h / n, vert: v / n };
}

/**
 * The thickness of `a`'s lips in its photo, as shares of the face's height: the mesh
 * found on the rest face with its teeth layer (the mouth before closing) pasted back,
 * the lower lip from the layer's inner contour, the upper one to it.
 */
async function photoLips(a: PhotoAvatar) {
  const t = a.teeth!, W = a.width, n = W * a.height, cw = W >> 1;
  const img = new Uint8Array(a.i420);
  for (let r = 0; r < t.h; r++) {
    img.set(t.i420.subarray(r * t.w, (r + 1) * t.w), (t.y + r) * W + t.x);
  }
  const q = t.w * t.h / 4;
  for (let r = 0; r < t.h / 2; r++) {
    const at = ((t.y >> 1) + r) * cw + (t.x >> 1), from = r * t.w / 2;
    for (const [dst, src] of [[n, t.w * t.h], [n + n / 4, t.w * t.h + q]]) {
      img.set(
        t.i420.subarray(src + from, src + from + t.w / 2),
        dst + at,
      );
    }
  }
  const rgb = { width: W, height: a.height, data: i420ToRgb(img, W, a.height) };
  const face = (await photoModels.faces(rgb))[0];
  const y = (i: number) => face.mesh[i * 3 + 1];
  const faceH = y(152) - y(10), mid = t.lower.length >> 2;
  return {
    lower: (y(17) - t.lower[2 * mid + 1]) / faceH,
    upper: (t.upper[2 * mid + 1] - y(0)) / faceH,
  };
}

Deno.test("a smiling portrait talks from a closed mouth", async (t) => {
  const p = createPhotoPainter(smile, { bg: null, seed: 0 });
  await t.step("the rest face shows no tooth between the lips", () => {
    const { state, weights } = faceWith({}, { t: 0 });
    const n = teethInLips(smile, paintOnce(p, state, weights).data);
    // (A lip's highlight may pass for a few; the photo's smile shows hundreds.)
    assert.ok(n <= 15, `tooth pixels at rest: ${n}`);
  });
  await t.step("p, b and m press the lips with no tooth through them", () => {
    const { state, weights } = faceWith({ [PP]: 1 });
    const n = teethInLips(smile, paintOnce(p, state, weights).data);
    assert.ok(n <= 15, `tooth pixels on PP: ${n}`);
  });
  await t.step(
    "where the lips meet, no streaks: the closing warp's leftovers are filled smoothly",
    () => {
      // Along the seam the closed lips change little from column to column; a fill
      // column by column (the old one) left vertical streaks where runs ended apart:
      // 0.61 of the change between rows there, against 0.45 filled as one surface.
      const { horiz, vert } = seamRoughness(smile);
      assert.ok(
        horiz <= 0.52 * vert,
        `seam: ${horiz.toFixed(2)} across columns, ${
          vert.toFixed(2)
        } across rows`,
      );
    },
  );
  await t.step(
    "each closed lip is about as thick as the photo's (a lip stretched over the teeth looked swollen, and hung like a tongue on O and U)",
    async () => {
      // The photo's lips: its mesh found again on the rest face with the mouth the
      // lips covered put back (the teeth layer holds it as it was).
      const photo = await photoLips(smile);
      const y = (i: number) => point(smile, i)[1];
      const faceH = y(152) - y(10);
      const lower = (y(17) - y(14)) / faceH, upper = (y(13) - y(0)) / faceH;
      // Measured: 0.052 and 0.035 against the photo's 0.051 and 0.032 (0.064 and
      // 0.042 when the closing stretched each lip over the teeth).
      assert.ok(
        lower <= 1.12 * photo.lower,
        `lower ${lower} vs ${photo.lower}`,
      );
      assert.ok(upper <= 1.2 * photo.upper, `upper ${upper} vs ${photo.upper}`);
    },
  );
  await t.step("the teeth the lips cover are kept as its teeth layer", () => {
    // (They show where the mouth opens: painter_test's "a smile's own teeth".)
    assert.ok(smile.teeth, "a teeth layer");
  });
});

Deno.test("aa opens the jaw as speech does, not as a yawn", async () => {
  const a = await testAvatar();
  const p = createPhotoPainter(a, { bg: null, seed: 0 });
  const { state, weights } = faceWith({ [AA]: 1 }, { t: 0 });
  const f = paintOnce(p, state, weights).data;
  const faceH = point(a, 152)[1] - point(a, 10)[1];
  // The chin's drop: where the photo's patch under the lower lip went (10–15 mm of a
  // speaking jaw, about 0.06–0.08 of the face's height; the lip drops a little more).
  const [cx, cy] = point(a, 17).map(Math.round);
  let best = Infinity, drop = 0;
  for (let d = 0; d <= 45; d++) {
    let sad = 0;
    for (let y = cy - 5; y < cy + 5; y++) {
      for (let x = cx - 10; x < cx + 10; x++) {
        sad += Math.abs(f[(y + d) * a.width + x] - a.i420[y * a.width + x]);
      }
    }
    if (sad < best) (best = sad, drop = d);
  }
  assert.ok(
    drop >= 0.05 * faceH && drop <= 0.095 * faceH,
    `the lower lip drops ${drop} px, ${(drop / faceH).toFixed(3)} of the face`,
  );
});

Deno.test("a closed blink hides the iris: only the lashes' line stays dark", async () => {
  for (const a of [await testAvatar(), smile]) {
    const p = createPhotoPainter(a, { bg: null, seed: 0 });
    const { state, weights } = faceWith({}, { t: 0, blink: 1 });
    const f = paintOnce(p, state, weights).data;
    const [sx, sy] = point(a, 118);
    const skin = a.i420[Math.round(sy) * a.width + Math.round(sx)];
    const dark = 16 + 0.45 * (skin - 16);
    for (
      const [c0, c1, top, low] of [[33, 133, 159, 145], [362, 263, 386, 374]]
    ) {
      // The tallest dark run down any column of the eye: the iris and pupil at rest,
      // the closed lid's lash line (a few pixels) when shut.
      const run = (luma: Uint8Array) => {
        let best = 0;
        const x0 = Math.round(point(a, c0)[0]),
          x1 = Math.round(point(a, c1)[0]);
        // Between the lids at rest, a pixel or two past each.
        const y0 = Math.round(point(a, top)[1] - 2);
        const y1 = Math.round(point(a, low)[1] + 2);
        // (The eye's corners, in the lids' shade, left out.)
        const q = Math.round(0.2 * (x1 - x0));
        for (let x = x0 + q; x < x1 - q; x++) {
          let n = 0;
          for (let y = y0; y < y1; y++) {
            n = luma[y * a.width + x] < dark ? n + 1 : 0;
            best = Math.max(best, n);
          }
        }
        return best;
      };
      const open = run(a.i420), shut = run(f);
      assert.ok(open >= 5, `an iris to hide: ${open} px tall`);
      assert.ok(
        shut <= 4,
        `${a.name} ${c0}: dark ${open} px tall at rest, ${shut} px shut`,
      );
    }
  }
});

Deno.test("restMouth() reads a dropped jaw's dark mouth; tooOpen() refuses it past 0.06 of the face", () => {
  // The astronaut's mouth as the photo had it, its teeth painted dark: an open
  // jaw, the mouth's inside in shadow.
  const open = smile;
  const t = open.teeth!;
  const i420 = new Uint8Array(open.i420);
  const landmarks = new Float32Array(open.landmarks);
  const up = [78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308];
  const lo = [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308];
  up.forEach((i, k) => {
    landmarks[i * 3] = t.upper[2 * k],
      landmarks[i * 3 + 1] = t.upper[2 * k + 1];
    landmarks[lo[k] * 3] = t.lower[2 * k];
    landmarks[lo[k] * 3 + 1] = t.lower[2 * k + 1];
  });
  for (let r = 0; r < t.h; r++) {
    for (let c = 0; c < t.w; c++) {
      const x = t.x + c, y = t.y + r;
      let yu = Infinity, yl = -Infinity;
      for (let k = 1; k < 11; k++) {
        const [ax, ay, bx, by] = [
          t.upper[2 * k - 2],
          t.upper[2 * k - 1],
          t.upper[2 * k],
          t.upper[2 * k + 1],
        ];
        if (x >= ax && x <= bx) {
          yu = ay + (by - ay) * (x - ax) / Math.max(1e-6, bx - ax);
        }
        const [cx, cy, dx, dy] = [
          t.lower[2 * k - 2],
          t.lower[2 * k - 1],
          t.lower[2 * k],
          t.lower[2 * k + 1],
        ];
        if (x >= cx && x <= dx) {
          yl = cy + (dy - cy) * (x - cx) / Math.max(1e-6, dx - cx);
        }
      }
      i420[y * 512 + x] = y > yu && y < yl ? 22 : t.i420[r * t.w + c];
    }
  }
  const mouth = restMouth({ width: 512, height: 512, i420, landmarks });
  assert.ok(mouth.reading.dark > 0.35, `dark ${mouth.reading.dark}`);
  assert.ok(mouth.reading.open > 0.06, `open ${mouth.reading.open}`);
  assert.ok(tooOpen(mouth.reading), "refused as too wide to close");
  // The same gap over teeth (a smile) is closed.
  assert.ok(!tooOpen({ ...mouth.reading, dark: 0.05 }), "a smile closes");
  // Over a row of teeth (a broad smile) up to 0.13; over less (a laugh) up to 0.095.
  assert.ok(!tooOpen({ open: 0.12, teeth: 0.8, dark: 0.05 }), "a broad smile");
  assert.ok(tooOpen({ open: 0.14, teeth: 0.8, dark: 0.05 }), "up to 0.13");
  assert.ok(tooOpen({ open: 0.1, teeth: 0.3, dark: 0.05 }), "up to 0.095");
});
