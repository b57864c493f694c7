/**
 * The photo mouth's shapes as a person sees them: a rounded vowel opens a small oval
 * (U smaller than O), not a box; the lips stay lips around it; the skin between the
 * nose and the upper lip keeps the photo's texture; an open mouth's inside is not one
 * flat dark; a smiling portrait's rounded mouth does not show the photo's teeth at its
 * shut corners; an O shows a band of upper teeth, not a black hole.
 */
import assert from "node:assert/strict";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import type { PhotoAvatar } from "../../../../lib/render/photo/types.ts";
import { buildRig } from "../../../../lib/render/photo/rig.ts";
import { createPose, posePoints } from "../../../../lib/render/photo/pose.ts";
import {
  faceWith,
  mouthBox,
  paintOnce,
  point,
  smileAvatar,
  testAvatar,
} from "./_avatar.ts";
import {
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
} from "../../../../lib/render/photo/landmarks.ts";
import { polylineY } from "../../../../lib/render/photo/geometry.ts";

const avatar = await testAvatar();
const W = avatar.width, H = avatar.height;
const painter = createPhotoPainter(avatar, { bg: null, seed: 1 });

function frameOf(viseme: string): Uint8Array {
  const { state, weights } = faceWith({ [visemeIndex(viseme as "O")]: 1 });
  return paintOnce(painter, state, weights).data;
}

/** The mean luma of the photo's lips (between the outer and inner contours). */
function lipLuma(a: PhotoAvatar): number {
  let s = 0, n = 0;
  for (const [o, i] of [[0, 13], [17, 14]]) {
    const y = Math.round((point(a, o)[1] + point(a, i)[1]) / 2);
    const [x] = point(a, o);
    for (let x0 = Math.round(x) - 6; x0 <= Math.round(x) + 6; x0++) {
      s += a.i420[y * W + x0];
      n++;
    }
  }
  return s / n;
}

/**
 * The opening: the connected pixels darker than half the lips' luma, grown from the
 * darkest pixel near the mouth's centre; its width, height and how much of its
 * bounding box it fills (π/4 for an ellipse, 1 for a box).
 */
export function opening(f: Uint8Array) {
  const { x0, x1, y0, y1 } = mouthBox(avatar);
  const level = 16 + 0.5 * (lipLuma(avatar) - 16);
  const cx = Math.round((x0 + x1) / 2);
  let seed = -1;
  for (let y = y0; y < y1; y++) {
    for (let x = cx - 4; x <= cx + 4; x++) {
      const i = y * W + x;
      if (f[i] < level && (seed < 0 || f[i] < f[seed])) seed = i;
    }
  }
  assert.ok(seed >= 0, "no dark opening");
  const seen = new Uint8Array(W * H), stack = [seed];
  seen[seed] = 1;
  let n = 0, l = W, r = 0, t = H, b = 0;
  while (stack.length) {
    const i = stack.pop()!, x = i % W, y = (i - x) / W;
    n++;
    l = Math.min(l, x), r = Math.max(r, x), t = Math.min(t, y);
    b = Math.max(b, y);
    for (const j of [i - 1, i + 1, i - W, i + W]) {
      const jx = j % W, jy = (j - jx) / W;
      if (jx < x0 - 10 || jx > x1 + 10 || jy < y0 - 10 || jy > y1) continue;
      if (!seen[j] && f[j] < level) (seen[j] = 1, stack.push(j));
    }
  }
  const w = r - l + 1, h = b - t + 1;
  return { w, h, fill: n / (w * h), top: t, bottom: b, cx: (l + r) / 2 };
}

/**
 * High-pass texture (mean |luma − its 5×5 box mean|) over the skin between the nose
 * and the upper lip: the philtrum, with a margin off the lip and the nose.
 */
function philtrumTexture(f: Uint8Array): number {
  const [nx, ny] = point(avatar, 2), [, ly] = point(avatar, 0);
  const [mx0] = point(avatar, 61), [mx1] = point(avatar, 291);
  const hw = (mx1 - mx0) * 0.3;
  const ya = Math.round(ny + 0.2 * (ly - ny)),
    yb = Math.round(ny + 0.7 * (ly - ny));
  let s = 0, n = 0;
  for (let y = ya; y < yb; y++) {
    for (let x = Math.round(nx - hw); x < Math.round(nx + hw); x++) {
      let m = 0;
      for (let dy = -2; dy <= 2; dy++) {
        for (let dx = -2; dx <= 2; dx++) m += f[(y + dy) * W + x + dx];
      }
      s += Math.abs(f[y * W + x] - m / 25);
      n++;
    }
  }
  return s / n;
}

Deno.test("rounded vowels open a small oval inside kept lips", () => {
  const o = opening(frameOf("O")), u = opening(frameOf("U"));
  const aa = opening(frameOf("aa"));
  for (const [name, s] of [["O", o], ["U", u]] as const) {
    // Rounder than a box (an ellipse fills π/4 ≈ 0.79 of its box).
    assert.ok(s.fill < 0.86, `${name} fills ${s.fill.toFixed(2)} of its box`);
    // Not a slot: about as tall as wide, at most twice as wide.
    assert.ok(s.w / s.h < 2.1, `${name} is ${s.w}×${s.h}`);
  }
  // U is the smaller, and both smaller across than aa's.
  assert.ok(u.w * u.h < 0.8 * o.w * o.h, `U ${u.w}×${u.h}, O ${o.w}×${o.h}`);
  assert.ok(o.w < 0.8 * aa.w, `O ${o.w} wide, aa ${aa.w}`);
  // The lips stay lips around it: pushed forward, each at least as thick as in
  // the photo (outer to inner contour at the middle), not thinned by the opening.
  const rig = buildRig(avatar), pose = createPose(rig);
  for (const v of ["O", "U"] as const) {
    const { state } = faceWith({ [visemeIndex(v)]: 1 });
    posePoints(rig, state, 0, 0, pose);
    for (const [outer, inner] of [[0, 13], [17, 14]]) {
      const rest = Math.abs(rig.sy[inner] - rig.sy[outer]);
      const now = Math.abs(pose.y[inner] - pose.y[outer]);
      assert.ok(now >= rest, `${v}: lip ${outer} ${now.toFixed(1)} < ${rest}`);
    }
  }
});

Deno.test("an O on a portrait without teeth showing has drawn upper teeth under its upper lip, not a black hole; U hides them", () => {
  const lip = lipLuma(avatar);
  const x = Math.round(point(avatar, 13)[0]);
  // Down the mouth's middle (five columns' mean): rows lit like teeth (brighter
  // than three quarters of the lips) right above the mouth's dark inside.
  const litAbove = (v: "O" | "U") => {
    const f = frameOf(v);
    const col: number[] = [];
    for (
      let y = Math.round(point(avatar, 0)[1]) - 2;
      y < point(avatar, 17)[1] + 12;
      y++
    ) {
      let s = 0;
      for (let dx = -2; dx <= 2; dx++) s += f[y * W + x + dx];
      col.push(s / 5);
    }
    const dark = col.findIndex((l) => l < 0.35 * lip);
    assert.ok(dark > 0, `${v}: the lips are apart`);
    // (Over the four rows above it: its edge is a row of half-light.)
    return col.slice(Math.max(0, dark - 4), dark).filter((l) => l > 0.75 * lip)
      .length;
  };
  // (Before: none in O, the rounded lips hid every drawn tooth.)
  const o = litAbove("O"), u = litAbove("U");
  assert.ok(o >= 2, `O: ${o} rows of teeth (lips ${lip.toFixed(0)})`);
  assert.ok(u <= 1, `U: ${u} rows of teeth`);
});

Deno.test("the philtrum keeps its texture on rounded vowels", () => {
  const rest = philtrumTexture(avatar.i420);
  for (const v of ["O", "U"]) {
    const t = philtrumTexture(frameOf(v));
    assert.ok(t > 0.92 * rest, `${v}: ${t.toFixed(2)} vs ${rest.toFixed(2)}`);
  }
});

Deno.test("an open mouth closes softly at its corners and lightens towards the tongue", () => {
  for (const v of ["aa", "E"]) {
    const f = frameOf(v);
    const o = opening(f);
    // Along the opening's middle row, from the lips into the corner: the lips' wet
    // inner side, then the dark; no cut (a step of half the lips' luma was).
    const y = Math.round((o.top + o.bottom) / 2);
    for (const dir of [1, -1]) {
      const x0 = Math.round(o.cx - dir * (o.w / 2 + 6));
      let step = 0;
      for (let k = 0; k < 16; k++) {
        const a = f[y * W + x0 + dir * k], b = f[y * W + x0 + dir * (k + 1)];
        step = Math.max(step, a - b);
      }
      assert.ok(step < 25, `${v}: a ${step} step into the corner (${dir})`);
    }
    // Down the middle (aa shows no lower teeth): from the darkest row to the
    // tongue the light comes back over rows, not in one edge.
    if (v !== "aa") continue;
    const col = (yy: number) => f[yy * W + Math.round(o.cx)];
    let dark = o.top;
    for (let yy = o.top; yy <= o.bottom; yy++) {
      if (col(yy) < col(dark)) dark = yy;
    }
    // (Within the opening: below it, a speech-sized opening's lower edge is the
    // photo's own lip line, carried down on the lower lip.)
    let rise = 0;
    for (let yy = dark; yy < o.bottom; yy++) {
      rise = Math.max(rise, col(yy + 1) - col(yy));
    }
    assert.ok(rise < 15, `${v}: the tongue's edge rises ${rise} in a row`);
  }
});

Deno.test("a smiling portrait's rounded mouth fills its corners, not with the photo's teeth", async () => {
  const a = await smileAvatar();
  const p = createPhotoPainter(a, { bg: null, seed: 1 });
  const rig = buildRig(a), pose = createPose(rig);
  for (const v of ["O", "U"] as const) {
    const { state, weights } = faceWith({ [visemeIndex(v)]: 1 });
    const f = paintOnce(p, state, weights).data;
    posePoints(rig, state, 0, 0, pose);
    const ux = LIP_INNER_UPPER.map((i) => pose.x[i]),
      uy = LIP_INNER_UPPER.map((i) => pose.y[i]);
    const lx = LIP_INNER_LOWER.map((i) => pose.x[i]),
      ly = LIP_INNER_LOWER.map((i) => pose.y[i]);
    // Inside the opening over its first two segments at each corner: where the
    // lips came closer than in the photo, the photo's own (bright) teeth were left
    // showing where they had been; now the lips' inner side and the dark.
    let drawn = 0, photo = 0;
    for (const [xa, xb] of [[ux[0], ux[2]], [ux.at(-3)!, ux.at(-1)!]]) {
      for (let x = Math.ceil(xa); x < xb; x++) {
        const y0 = polylineY(ux, uy, x + 0.5), y1 = polylineY(lx, ly, x + 0.5);
        for (let y = Math.ceil(y0 + 1); y < y1 - 1; y++) {
          drawn += f[y * W + x];
          photo += a.i420[y * W + x];
        }
      }
    }
    assert.ok(photo > 0, `${v}: no corner pixels`);
    assert.ok(
      drawn < 0.82 * photo,
      `${v}: corners ${(drawn / photo).toFixed(2)} of the photo's luma`,
    );
  }
});
