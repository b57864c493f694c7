/**
 * The measures of `deno task photo:eval` (scripts/photo_eval/measure.ts) on synthetic
 * frames with a hand-placed mesh: teeth-like pixels between the lips, iris-dark pixels
 * in the eyes, the lips' and lids' gaps.
 */
import assert from "node:assert/strict";
import {
  eyeOpening,
  eyeTones,
  followEyes,
  insidePolygon,
  irisPercent,
  LEFT_EYE,
  lipGap,
  LIPS_OUTER,
  polygon,
  type RgbFrame,
  RIGHT_EYE,
  teethPercent,
} from "../../../scripts/photo_eval/measure.ts";
import { expectedOpening } from "../../../scripts/photo_eval/speech.ts";
import { evalAvatarId } from "../../../scripts/photo_eval/evaluate.ts";

const W = 200, H = 240;
type Rgb = [number, number, number];

/** Points `idx` of `mesh` on an ellipse (centre, radii), in order. */
function ring(
  mesh: Float32Array,
  idx: number[],
  [cx, cy]: [number, number],
  [rx, ry]: [number, number],
) {
  idx.forEach((i, k) => {
    const a = -2 * Math.PI * k / idx.length;
    mesh[i * 3] = cx + rx * Math.cos(a);
    mesh[i * 3 + 1] = cy + ry * Math.sin(a);
  });
}

/** A frontal face: mouth at (100, 170), eyes at (70, 90) and (130, 90). */
function faceMesh(): Float32Array {
  const m = new Float32Array(478 * 3);
  const set = (
    i: number,
    x: number,
    y: number,
  ) => (m[i * 3] = x, m[i * 3 + 1] = y);
  set(10, 100, 30), set(152, 100, 230); // forehead, chin
  set(234, 20, 120), set(454, 180, 120); // face's sides
  set(205, 60, 140), set(425, 140, 140); // cheeks
  ring(m, LIPS_OUTER, [100, 170], [36, 16]);
  ring(m, RIGHT_EYE, [70, 90], [18, 8]);
  ring(m, LEFT_EYE, [130, 90], [18, 8]);
  // The irises: a centre, then four points on a rim of radius 7.
  for (const [c, cx] of [[468, 70], [473, 130]]) {
    set(c, cx, 90);
    ring(m, [c + 1, c + 2, c + 3, c + 4], [cx, 90], [7, 7]);
  }
  return m;
}

/** A frame of `skin`, painted by `paint(x, y)` where it returns a colour. */
function frame(skin: Rgb, paint: (x: number, y: number) => Rgb | null) {
  const data = new Uint8Array(W * H * 3);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const c = paint(x + 0.5, y + 0.5) ?? skin;
      data.set(c, (y * W + x) * 3);
    }
  }
  return { width: W, height: H, data } satisfies RgbFrame;
}

const inEllipse = (
  x: number,
  y: number,
  cx: number,
  cy: number,
  rx: number,
  ry: number,
) => ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 < 1;

Deno.test("insidePolygon() takes the pixels whose centres are inside", () => {
  const square: Array<[number, number]> = [[10, 10], [20, 10], [20, 15], [
    10,
    15,
  ]];
  assert.equal(insidePolygon(square, W, H).length, 10 * 5);
  // Clipped to the frame.
  const off: Array<[number, number]> = [[-5, -5], [3, -5], [3, 2], [-5, 2]];
  assert.equal(insidePolygon(off, W, H).length, 3 * 2);
});

Deno.test("teethPercent() counts teeth between the lips, not lips or skin", async (t) => {
  const mesh = faceMesh();
  const mouth = new Set(insidePolygon(polygon(mesh, LIPS_OUTER), W, H));
  const cases: Array<{ name: string; skin: Rgb; lips: Rgb; teeth: Rgb }> = [
    {
      name: "light skin",
      skin: [215, 170, 145],
      lips: [185, 95, 95],
      teeth: [235, 230, 215],
    },
    {
      name: "dark skin",
      skin: [105, 70, 50],
      lips: [95, 50, 50],
      teeth: [225, 215, 195],
    },
    {
      // Pale lips are as bright and unsaturated as teeth, but redder than the skin.
      name: "pale lips on light skin",
      skin: [215, 170, 145],
      lips: [225, 170, 160],
      teeth: [235, 230, 215],
    },
    {
      name: "pink lips on dark skin",
      skin: [105, 70, 50],
      lips: [200, 140, 140],
      teeth: [225, 215, 195],
    },
    {
      name: "black and white",
      skin: [150, 150, 150],
      lips: [110, 110, 110],
      teeth: [215, 215, 215],
    },
    {
      // Without colour, lips lit as brightly as the cheeks are not teeth (an old
      // print's pale lips): teeth are clearly brighter than the skin.
      name: "black and white, lips as bright as the skin",
      skin: [160, 160, 160],
      lips: [165, 165, 165],
      teeth: [215, 215, 215],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const shut = frame(
        c.skin,
        (x, y) => inEllipse(x, y, 100, 170, 36, 16) ? c.lips : null,
      );
      assert.equal(teethPercent(shut, mesh), 0);
      // A band of teeth 8 px high across the mouth's middle.
      const band = (y: number) => Math.abs(y - 170) < 4;
      const smile = frame(
        c.skin,
        (x, y) =>
          inEllipse(x, y, 100, 170, 36, 16)
            ? (band(y) ? c.teeth : c.lips)
            : null,
      );
      let want = 0;
      for (const i of mouth) if (band(Math.floor(i / W) + 0.5)) want++;
      const got = teethPercent(smile, mesh);
      assert.ok(want > 0.2 * mouth.size, `band of ${want} px`);
      assert.ok(
        Math.abs(got - 100 * want / mouth.size) < 0.01,
        `${got}% for ${(100 * want / mouth.size).toFixed(2)}%`,
      );
    });
  }
});

Deno.test("irisPercent() sees the iris of an open eye, none under a shut lid, a wedge through it", () => {
  const mesh = faceMesh();
  const skin: Rgb = [200, 160, 140];
  const iris: Rgb = [40, 30, 25];
  const eye = (x: number, y: number): Rgb | null => {
    for (const cx of [70, 130]) {
      if (!inEllipse(x, y, cx, 90, 18, 8)) continue;
      return Math.hypot(x - cx, y - 90) < 7 ? iris : [235, 235, 230];
    }
    return null;
  };
  const open = frame(skin, eye);
  const tones = eyeTones(open, mesh, RIGHT_EYE);
  assert.ok(tones.iris < 50 && tones.lid > 150, JSON.stringify(tones));
  const r = irisPercent(open, mesh, tones, RIGHT_EYE);
  const l = irisPercent(open, mesh, eyeTones(open, mesh, LEFT_EYE), LEFT_EYE);
  assert.ok(r > 40 && r < 90, `right ${r}%`);
  assert.ok(Math.abs(r - l) < 2, `right ${r}%, left ${l}%`);
  // The lid shut: skin where the eye was, the lashes' dark line (2 px) along its
  // bottom: no iris.
  const lash = (x: number, y: number) =>
    (x > 52 && x < 88 || x > 112 && x < 148) && Math.abs(y - 93) < 1;
  const shut = frame(skin, (x, y) => lash(x, y) ? [60, 40, 35] : null);
  const shutPct = irisPercent(shut, mesh, tones, RIGHT_EYE);
  assert.ok(shutPct < 1, `shut ${shutPct}%`);
  // The iris poking through the lid as a wedge above the lashes (the defect the
  // measure is for): counted.
  const wedge = frame(
    skin,
    (x, y) =>
      lash(x, y)
        ? [60, 40, 35]
        : y < 93 && y > 87 + Math.abs(x - 70) / 2
        ? iris
        : null,
  );
  const wedgePct = irisPercent(wedge, mesh, tones, RIGHT_EYE);
  assert.ok(wedgePct > 8, `wedge ${wedgePct}%`);
});

Deno.test("irisPercent() tells a light iris from a lid in shade as dark as it by colour", () => {
  const mesh = faceMesh();
  const skin: Rgb = [200, 160, 140];
  // A grey-blue iris (luma ~105) under a lid whose skin is ~125 where lit.
  const iris: Rgb = [90, 105, 135];
  const lidSkin: Rgb = [165, 118, 98];
  const open = frame(skin, (x, y) => {
    if (y < 82 && y > 66 && Math.abs(x - 70) < 14) return lidSkin;
    if (!inEllipse(x, y, 70, 90, 18, 8)) return null;
    return Math.hypot(x - 70, y - 90) < 7 ? iris : [235, 235, 230];
  });
  const tones = eyeTones(open, mesh, RIGHT_EYE);
  // Shut, the lid's skin comes down in shade: darker than half way to the iris.
  const shade: Rgb = [140, 98, 80];
  assert.ok(
    0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2] <
      (tones.iris + tones.lid) / 2,
    JSON.stringify(tones),
  );
  const shut = frame(
    skin,
    (x, y) => inEllipse(x, y, 70, 90, 18, 8) ? shade : null,
  );
  const shutPct = irisPercent(shut, mesh, tones, RIGHT_EYE);
  assert.ok(shutPct < 1, `shut ${shutPct}%`);
  // The same iris poking through the lid: counted.
  const wedge = frame(
    skin,
    (x, y) =>
      inEllipse(x, y, 70, 90, 18, 8)
        ? (y > 86 && Math.abs(x - 70) < 8 ? iris : shade)
        : null,
  );
  const wedgePct = irisPercent(wedge, mesh, tones, RIGHT_EYE);
  assert.ok(wedgePct > 8, `wedge ${wedgePct}%`);
});

Deno.test("lipGap() and eyeOpening() measure along the face, whatever its roll", () => {
  const mesh = faceMesh();
  const set = (
    i: number,
    x: number,
    y: number,
  ) => (mesh[i * 3] = x, mesh[i * 3 + 1] = y);
  for (const [u, l, x] of [[13, 14, 100], [81, 178, 92], [311, 402, 108]]) {
    set(u, x, 166), set(l, x, 176);
  }
  set(159, 70, 86), set(145, 70, 94), set(33, 52, 90), set(133, 88, 90);
  set(386, 130, 87), set(374, 130, 93), set(362, 112, 90), set(263, 148, 90);
  assert.ok(Math.abs(lipGap(mesh) - 10 / 200) < 1e-6, `${lipGap(mesh)}`);
  assert.ok(Math.abs(eyeOpening(mesh) - (8 / 36 + 6 / 36) / 2) < 1e-6);
  // Rolled 30° about (100, 130): the same face, the same gaps.
  const a = Math.PI / 6;
  const rolled = mesh.map((v, i) => {
    if (i % 3 === 2) return v;
    const x = mesh[i - (i % 3)] - 100, y = mesh[i - (i % 3) + 1] - 130;
    return i % 3 === 0
      ? 100 + x * Math.cos(a) - y * Math.sin(a)
      : 130 + x * Math.sin(a) + y * Math.cos(a);
  });
  assert.ok(Math.abs(lipGap(rolled) - lipGap(mesh)) < 1e-4);
  assert.ok(Math.abs(eyeOpening(rolled) - eyeOpening(mesh)) < 1e-4);
  // Lips that overlap (the lower above the upper) are shut, not negative.
  set(13, 100, 176), set(14, 100, 166);
  set(81, 92, 176), set(178, 92, 166), set(311, 108, 176), set(402, 108, 166);
  assert.equal(lipGap(mesh), 0);
});

Deno.test("followEyes() moves the open eyes' outline with the eye corners", () => {
  const rest = faceMesh();
  const now = rest.map((v, i) => i % 3 === 0 ? v + 5 : i % 3 === 1 ? v - 3 : v);
  const moved = followEyes(rest, now);
  assert.ok(Math.abs(moved[159 * 3] - (rest[159 * 3] + 5)) < 1e-4);
  assert.ok(Math.abs(moved[159 * 3 + 1] - (rest[159 * 3 + 1] - 3)) < 1e-4);
});

Deno.test("expectedOpening() is shut on p, b, m and silence, open on vowels", () => {
  assert.equal(expectedOpening("PP"), 0);
  assert.equal(expectedOpening("sil"), 0);
  assert.ok(expectedOpening("aa") > 0.5);
});

Deno.test("evalAvatarId() gives each portrait an id of its own, in the photo avatar id form", () => {
  const names = [
    "wh-obama-2012-official-smile-teeth",
    "cg-021735-bald-smile-teeth",
  ];
  const ids = names.map(evalAvatarId);
  for (const id of ids) assert.match(id, /^ph_[0-9A-Z]{26}$/);
  assert.notEqual(ids[0], ids[1]);
  assert.equal(evalAvatarId(names[0]), ids[0]);
});
