/**
 * The photo's teeth row (lib/render/photo/teeth.ts): its biting edge has no notch
 * narrower than a tooth. A shaded line that stopped six columns' scan a few pixels
 * under the lip drew, on every open vowel, a dark gap as if a tooth were missing; and
 * where the photo's lips hid part of the row, the opened mouth showed its dark inside
 * there, half a row of teeth missing; where the row ended, a hard edge and a dark block;
 * rounded lips (O, U) showed a smile's whole row filling the small opening (buck teeth).
 */
import assert from "node:assert/strict";
import {
  closeNotches,
  easeSteps,
  EDGE_SLOPE,
  photoTeeth,
} from "../../../../lib/render/photo/teeth.ts";
import type { TeethLayer } from "../../../../lib/render/photo/types.ts";
import { buildRig } from "../../../../lib/render/photo/rig.ts";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import { faceWith, paintOnce, smileAvatar } from "./_avatar.ts";

/**
 * A 60×20 teeth layer: lip above row 4, teeth rows 4–15, mouth below; `pink`: rows
 * 4–15 have the lip's colour (a light lip over no teeth) instead of the teeth's grey.
 */
function layer(shadeCols: [number, number] | null, pink = false): TeethLayer {
  const w = 60, h = 20;
  const i420 = new Uint8Array(w * h * 3 / 2).fill(128);
  if (pink) {
    const q = w * h / 4;
    for (let c = 0; c < q; c++) {
      const row = Math.floor(c / (w / 2)) * 2;
      if (row >= 4 && row < 16) {
        i420[w * h + c] = LIP.u, i420[w * h + q + c] = LIP.v;
      }
    }
  }
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

/** A pink lip's tone (8-bit Y, U, V). */
const LIP = { y: 150, u: 118, v: 160 };

Deno.test("photoTeeth(): a light lip between parted lips is no row of teeth (beside dark skin)", () => {
  // Skin at Y 110: the lip at Y 220 is as bright as a tooth; only its colour tells.
  assert.equal(photoTeeth(layer(null, true), 200, 110, LIP), null);
  const grey = photoTeeth(layer(null), 200, 110, LIP);
  assert.ok(grey && grey.edge[20] - grey.top[20] >= 10);
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

Deno.test("easeSteps() turns a step in the biting edge into a slope on its tall side; the row's ends and a tooth's scallop stay", () => {
  // A row lit on its left (teeth 14 px tall) and shaded on its right (5 px: the
  // scan stopped early), as on a hard-lit portrait; 1-px scallops on the left.
  const top = Float32Array.from({ length: 60 }, (_, c) => 100 + 0.2 * c);
  const h = (c: number) =>
    c < 10 || c > 50 ? 0 : c < 35 ? 13 + (c % 6 < 3 ? 1 : 0) : 5;
  const edge = Float32Array.from(top, (t, c) => t + h(c));
  easeSteps(top, edge);
  const got = Array.from(edge, (e, c) => e - top[c]);
  for (let c = 11; c <= 50; c++) {
    assert.ok(
      Math.abs(got[c] - got[c - 1]) <= EDGE_SLOPE + 1e-4 || c === 11,
      `columns ${c - 1}–${c}: ${got[c - 1].toFixed(2)} → ${got[c].toFixed(2)}`,
    );
  }
  // Cut back, never raised: the shaded part is as it was, the lit part's far side
  // untouched (its scallops too), the row's ends where they were.
  for (let c = 35; c <= 50; c++) assert.ok(Math.abs(got[c] - 5) < 1e-4);
  for (let c = 10; c < 20; c++) assert.ok(Math.abs(got[c] - h(c)) < 1e-4);
  for (const c of [0, 9, 51, 59]) assert.equal(got[c], 0);
});

Deno.test("where the photo's lips hid part of its teeth row, the opened mouth shows teeth there too, not a dark gap", async () => {
  const smile = await smileAvatar();
  const L = smile.teeth!;
  // The same smile with its teeth hidden on the left third of the row (lip-toned).
  const i420 = L.i420.slice();
  const xs: number[] = [];
  for (let k = 0; k < L.upper.length; k += 2) xs.push(L.upper[k]);
  const mid = xs[0] + (xs[xs.length - 1] - xs[0]) / 3;
  for (let r = 0; r < L.h; r++) {
    for (let c = 0; c < L.w; c++) {
      if (L.x + c < mid) i420[r * L.w + c] = Math.min(i420[r * L.w + c], 110);
    }
  }
  // Its own id: painters keep rigs by avatar.
  const half = {
    ...smile,
    avatarId: "ph_SMILEHIDDEN000000000000000",
    teeth: { ...L, i420 },
  };
  const own = buildRig(half).photoTeeth!;
  assert.ok(own, "the rest of the row still shows teeth");
  const p = createPhotoPainter(half, { bg: null, seed: 1 });
  const { state, weights } = faceWith({ [visemeIndex("aa")]: 1 });
  const f = paintOnce(p, state, weights).data;
  // Just under the upper lip, in the hidden third (half way in).
  const x = Math.round((xs[0] + mid) / 2);
  const c = x - own.x0;
  let sum = 0, n = 0;
  for (
    let y = own.top[c] + 0.4 * own.height;
    y < own.top[c] + own.height;
    y++
  ) {
    for (let dx = -3; dx <= 3; dx++) {
      sum += f[Math.round(y) * smile.width + x + dx];
      n++;
    }
  }
  const mean = sum / n;
  // Teeth in the opening's shade (about 95), where the mouth's dark inside was (30).
  assert.ok(mean > 70, `the hidden third's teeth: luma ${mean.toFixed(0)}`);
});

Deno.test("where the photo's teeth row ends, drawn teeth take over gradually: no hard edge, no dark block", async () => {
  const smile = await smileAvatar();
  const L = smile.teeth!;
  // The same smile whose row ends two thirds of the way: a dark mouth beyond.
  const i420 = L.i420.slice();
  const xs: number[] = [];
  for (let k = 0; k < L.upper.length; k += 2) xs.push(L.upper[k]);
  const end = Math.round(xs[0] + (xs[xs.length - 1] - xs[0]) * 2 / 3);
  for (let r = 0; r < L.h; r++) {
    for (let c = 0; c < L.w; c++) {
      if (L.x + c >= end) i420[r * L.w + c] = Math.min(i420[r * L.w + c], 40);
    }
  }
  // Its own id: painters keep rigs by avatar.
  const cut = {
    ...smile,
    avatarId: "ph_SMILEROWEND000000000000000",
    teeth: { ...L, i420 },
  };
  const own = buildRig(cut).photoTeeth!;
  const p = createPhotoPainter(cut, { bg: null, seed: 1 });
  const { state, weights } = faceWith({ [visemeIndex("aa")]: 1 });
  const f = paintOnce(p, state, weights).data;
  // Each column's mean luma over the row's middle half, around the end.
  const col = (x: number) => {
    const c = x - own.x0;
    let sum = 0, n = 0;
    for (
      let y = own.top[c] + 0.25 * own.height;
      y < own.top[c] + 0.75 * own.height;
      y++
    ) sum += f[Math.round(y) * smile.width + x], n++;
    return sum / n;
  };
  const steps: number[] = [];
  for (let x = end - 8; x < end + 8; x++) {
    steps.push(Math.abs(col(x + 1) - col(x)));
  }
  const inside: number[] = [];
  for (let x = end - 30; x < end - 10; x++) {
    inside.push(Math.abs(col(x + 1) - col(x)));
  }
  // No step between columns larger than twice the photo's own row shows (its gaps
  // between teeth), and no dark column: teeth go on, shaded, towards the corner.
  assert.ok(
    Math.max(...steps) <= 2 * Math.max(...inside),
    `steps ${steps.map((s) => s.toFixed(0))} beside ${
      inside.map((s) => s.toFixed(0))
    } inside the row`,
  );
  const lit = col(end - 20);
  for (let x = end - 8; x <= end + 8; x++) {
    assert.ok(col(x) > 0.5 * lit, `column ${x - end} from the end: ${col(x)}`);
  }
});

Deno.test("rounded lips (O, U) show only the lower part of the photo's teeth row under the upper lip, the dark inside below it; an open aa keeps the whole row", async () => {
  const smile = await smileAvatar();
  const own = buildRig(smile).photoTeeth!;
  const p = createPhotoPainter(smile, { bg: null, seed: 1 });
  const x = Math.round(own.x0 + own.edge.length / 2), c = x - own.x0;
  // Down the mouth's middle (five columns' mean): rows lit like teeth, rows as dark
  // as the inside.
  const rows = (v: "O" | "U" | "aa") => {
    const { state, weights } = faceWith({ [visemeIndex(v)]: 1 });
    const f = paintOnce(p, state, weights).data;
    let teeth = 0, dark = 0;
    for (
      let y = Math.round(own.top[c]) - 4;
      y < own.top[c] + 3 * own.height;
      y++
    ) {
      let s = 0;
      for (let dx = -2; dx <= 2; dx++) s += f[y * smile.width + x + dx];
      if (s / 5 > 0.9 * own.y) teeth++;
      else if (s / 5 < 0.5 * own.y) dark++;
    }
    return { teeth, dark };
  };
  for (const v of ["O", "U"] as const) {
    const { teeth, dark } = rows(v);
    // (Before: 8 rows of teeth over 7 rows of the inside in O, 8 over 1 in U.)
    assert.ok(dark > 0, `${v}: the lips are apart`);
    assert.ok(
      teeth / (teeth + dark) <= 0.4,
      `${v}: ${teeth} rows of teeth over ${dark} of the inside`,
    );
  }
  const aa = rows("aa");
  assert.ok(
    aa.teeth >= 0.6 * own.height,
    `aa: ${aa.teeth} rows of teeth, the row ${own.height.toFixed(1)} tall`,
  );
});
