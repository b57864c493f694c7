/**
 * What the photo painter paints: the photo itself at rest; the mouth and jaw opening
 * with the visemes, a smile's own teeth, lips shut on p/b/m; blinks and gaze; an idle
 * portrait that stays alive without shimmer; catalog and transparent backgrounds; and
 * the same frames from the same seed.
 */
import assert from "node:assert/strict";
import { BACKGROUNDS } from "../../../../lib/avatars.ts";
import { FaceDriver } from "../../../../lib/render/face.ts";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import { backgroundPlanes } from "../../../../lib/render/raster.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import { FRAME_SAMPLES, loadSet } from "../../../../scripts/lipsync/set.ts";
import {
  faceWith,
  mouthBox,
  mouthGap,
  paintOnce,
  point,
  smileAvatar,
  testAvatar,
} from "./_avatar.ts";
import { buildRig } from "../../../../lib/render/photo/rig.ts";
import { ssim } from "../../../../scripts/ssim.ts";

const avatar = await testAvatar();
const W = avatar.width, N = W * avatar.height;
const AA = visemeIndex("aa"), PP = visemeIndex("PP"), E = visemeIndex("E");
const O = visemeIndex("O");
const own = createPhotoPainter(avatar, { bg: null, seed: 1 });
/** Lips shut: no wider apart than in the photo, give or take a pixel and a half. */
const shutLimit = mouthGap(avatar, avatar.i420) + 1.5;

/** Rest luma of the eye between landmarks `a` (corner) and `b` (corner). */
function eyeBox(a: number, b: number) {
  const [x0, y0] = point(avatar, a), [x1, y1] = point(avatar, b);
  const cy = (y0 + y1) / 2, r = (x1 - x0) / 2;
  return {
    x0: Math.round(x0 + 0.15 * r * 2),
    x1: Math.round(x1 - 0.15 * r * 2),
    y0: Math.round(cy - 0.35 * r),
    y1: Math.round(cy + 0.35 * r),
  };
}
const EYES = [eyeBox(33, 133), eyeBox(362, 263)];

/** Pixels of `b` darker than `level`. */
function darkIn(
  luma: Uint8Array,
  b: ReturnType<typeof eyeBox>,
  level: number,
): number {
  let n = 0;
  for (let y = b.y0; y < b.y1; y++) {
    for (let x = b.x0; x < b.x1; x++) if (luma[y * W + x] < level) n++;
  }
  return n;
}

/**
 * How far down (px) the photo's patch around landmark `i` moved in `f`: the vertical
 * offset whose 20×10 patch matches best (least absolute difference).
 */
function shiftOf(f: Uint8Array, i: number): number {
  const [cx, cy] = point(avatar, i).map(Math.round);
  let best = Infinity, at = 0;
  for (let d = -10; d <= 45; d++) {
    let sad = 0;
    for (let y = cy - 5; y < cy + 5; y++) {
      for (let x = cx - 10; x < cx + 10; x++) {
        sad += Math.abs(f[(y + d) * W + x] - avatar.i420[y * W + x]);
      }
    }
    if (sad < best) (best = sad, at = d);
  }
  return at;
}

function stats(luma: Uint8Array, b: ReturnType<typeof eyeBox>) {
  const v: number[] = [];
  for (let y = b.y0; y < b.y1; y++) {
    for (let x = b.x0; x < b.x1; x++) v.push(luma[y * W + x]);
  }
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  const sd = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
  return { mean, sd, min: Math.min(...v) };
}

Deno.test("photo painter", async (t) => {
  await t.step("a still face is the photo itself, pixel for pixel", () => {
    // Seed 0 and t = 0: no breath, no sway; nothing may be drawn over the photo.
    const p = createPhotoPainter(avatar, { bg: null, seed: 0 });
    const { state, weights } = faceWith({}, { t: 0 });
    const f = paintOnce(p, state, weights).data;
    let differ = 0;
    for (let i = 0; i < f.length; i++) if (f[i] !== avatar.i420[i]) differ++;
    assert.equal(differ, 0);
  });

  await t.step("the mouth opens with the jaw viseme's weight", () => {
    const counts = [0, 0.25, 0.5, 0.75, 1].map((k) => {
      const { state, weights } = faceWith({ [AA]: k });
      return mouthGap(avatar, paintOnce(own, state, weights).data);
    });
    assert.ok(counts[0] <= shutLimit, `closed: ${counts[0]} vs ${shutLimit}`);
    // It opens up to half way; further the jaw's extra opening fills with the teeth
    // and the tongue the opening shows, the dark between them no smaller.
    for (let i = 1; i < 3; i++) {
      assert.ok(counts[i] > counts[i - 1] + 1, `grows: ${counts}`);
    }
    for (let i = 3; i < counts.length; i++) {
      assert.ok(counts[i] >= counts[2] - 1, `stays open: ${counts}`);
    }
    // Wide open as speech opens (0.077 of the face's height, MAX_DROP): the dark
    // inside between the teeth and the tongue alone is a thirtieth of it.
    const faceH = point(avatar, 152)[1] - point(avatar, 10)[1];
    assert.ok(counts[4] > 0.033 * faceH, `aa: ${counts[4]} px`);
  });

  await t.step(
    "a smile's own teeth stay in the opened mouth, fixed to the skull",
    async () => {
      const smile = await smileAvatar();
      assert.equal(
        buildRig(avatar).photoTeeth,
        null,
        "Hopper's lips are closed",
      );
      const teeth = buildRig(smile).photoTeeth;
      assert.ok(teeth && teeth.y > 150, "the astronaut smiles, teeth bright");
      const p = createPhotoPainter(smile, { bg: null, seed: 1 });
      const { state, weights } = faceWith({ [AA]: 1 });
      const f = paintOnce(p, state, weights).data;
      // The photo's upper teeth (its teeth layer, under the rest face's closed lips)
      // at the mouth's middle: still the photo's teeth, give or take the breath and
      // the opening's light.
      const L = smile.teeth!;
      const mid = L.upper.length / 2 | 1;
      const tx = Math.round(L.upper[mid - 1]), ty = L.upper[mid];
      let near = 0, n = 0;
      for (let x = tx - 10; x <= tx + 10; x++) {
        for (let y = Math.round(ty + 2); y < ty + 6; y++) {
          n++;
          const was = L.i420[(y - L.y) * L.w + x - L.x];
          if (Math.abs(f[y * W + x] - was) < 40) near++;
        }
      }
      assert.ok(n > 20 && near / n > 0.8, `teeth kept: ${near}/${n}`);
    },
  );

  await t.step(
    "the jaw turns: the chin follows the lower lip down, a little less",
    () => {
      const { state, weights } = faceWith({ [AA]: 1 });
      const f = paintOnce(own, state, weights).data;
      const faceH = point(avatar, 152)[1] - point(avatar, 10)[1];
      const lip = shiftOf(f, 17), chin = shiftOf(f, 152);
      assert.ok(lip > 0.05 * faceH, `the lower lip drops ${lip} px`);
      assert.ok(
        chin > 0.6 * lip && chin <= lip + 1,
        `chin ${chin} px, lip ${lip} px`,
      );
      // The forehead does not move with the jaw.
      assert.ok(Math.abs(shiftOf(f, 151)) <= 1, "forehead still");
    },
  );

  await t.step(
    "p, b and m shut the lips, even blended with an open vowel",
    () => {
      for (
        const w of [{ [PP]: 1 }, { [PP]: 0.45, [AA]: 0.35 }, {
          [PP]: 0.4,
          [O]: 0.3,
          [E]: 0.2,
        }]
      ) {
        const { state, weights } = faceWith(w);
        const dark = mouthGap(avatar, paintOnce(own, state, weights).data);
        assert.ok(
          dark <= shutLimit,
          `${JSON.stringify(w)}: ${dark} vs ${shutLimit}`,
        );
      }
    },
  );

  await t.step(
    "on real speech, ≥ 80 % of the p/b/m frames show shut lips",
    async () => {
      const set = await loadSet();
      const p = createPhotoPainter(avatar, { bg: null, seed: 2 });
      let pp = 0, shut = 0;
      for (const u of set) {
        const driver = new FaceDriver(3);
        for (let i = 0; i < u.labels.length; i++) {
          const s = driver.next(
            u.pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES),
          );
          if (u.labels[i] !== "PP") continue;
          pp++;
          const f = paintOnce(p, s, driver.weights).data;
          if (mouthGap(avatar, f) <= shutLimit) shut++;
        }
      }
      assert.ok(pp >= 10, `PP frames in the set: ${pp}`);
      assert.ok(shut / pp >= 0.8, `shut ${shut} of ${pp}`);
    },
  );

  await t.step("a blink covers the eye with the eyelid's own texture", () => {
    const { state, weights } = faceWith({}, { blink: 1 });
    const f = paintOnce(own, state, weights).data;
    for (const b of EYES) {
      const open = stats(avatar.i420, b), shut = stats(f, b);
      // The dark iris and pupil are gone under the lid...
      const irisDark = 16 + 0.45 * (open.mean - 16);
      const before = darkIn(avatar.i420, b, irisDark),
        after = darkIn(f, b, irisDark);
      assert.ok(
        before > 15 && after < 0.35 * before,
        `iris pixels ${before} → ${after}`,
      );
      // ...and the lid is skin with its creases, not a flat fill.
      assert.ok(shut.sd > 4, `textured lid: sd ${shut.sd}`);
    }
  });

  await t.step(
    "half closed, the lid is opaque: the eye below its edge is the photo's, no iris ghosted through it",
    () => {
      // At a blink of 0.55 the lid cover used to be cross-faded in at half strength
      // over the whole opening: the lower half's iris showed through a translucent
      // lid (on a tile, a blink's first frame read as a wink).
      const { state, weights } = faceWith({}, { blink: 0.55 });
      const f = paintOnce(own, state, weights).data;
      for (const b of EYES) {
        const lower = { ...b, y0: Math.round((b.y0 + b.y1) / 2) + 1 };
        const open = stats(avatar.i420, lower), half = stats(f, lower);
        assert.ok(
          half.min <= open.min + 12,
          `the darkest of the eye's lower half: ${open.min} → ${half.min}`,
        );
      }
    },
  );

  await t.step("the irises follow the gaze, leaving no ghost behind", () => {
    const rig = buildRig(avatar);
    EYES.forEach((b, k) => {
      const dark = 16 + 0.45 * (stats(avatar.i420, b).mean - 16);
      const eye = rig.eyes[k];
      const look = (x: number) => {
        const { state, weights } = faceWith({}, { gaze: { x, y: 0 } });
        const f = paintOnce(own, state, weights).data;
        // Centroid of the iris's dark pixels in the eye's box...
        let sx = 0, n = 0;
        for (let y = b.y0; y < b.y1; y++) {
          for (let xx = b.x0; xx < b.x1; xx++) {
            if (f[y * W + xx] < dark) (sx += xx, n++);
          }
        }
        // ...and the dark runs (2 px or more) across the eye on the iris's row: one
        // iris, not the moved one beside what is left of the old.
        const row = Math.round(eye.irisY) * W;
        let runs = 0, len = 0;
        const x0 = Math.round(eye.irisX - 3 * eye.irisR);
        for (let xx = x0; xx <= eye.irisX + 3 * eye.irisR; xx++) {
          len = f[row + xx] < dark ? len + 1 : 0;
          if (len === 2) runs++;
        }
        return { at: sx / n, runs };
      };
      const r = look(0.8), l = look(-0.8);
      assert.ok(r.at > l.at + 1.5, `right gaze ${r.at} vs left gaze ${l.at}`);
      assert.ok(r.runs <= 1 && l.runs <= 1, `iris runs ${r.runs}, ${l.runs}`);
    });
  });

  await t.step(
    "idle: the portrait itself, alive (SSIM ≥ 0.9 outside mouth and eyes)",
    () => {
      const driver = new FaceDriver(5);
      const silence = new Int16Array(FRAME_SAMPLES);
      const mouth = mouthBox(avatar);
      const skip = (x: number, y: number) =>
        (x >= mouth.x0 - 4 && x < mouth.x1 + 4 && y >= mouth.y0 - 4 &&
          y < mouth.y1 + 4) ||
        EYES.some((b) =>
          x >= b.x0 - 8 && x < b.x1 + 8 && y >= b.y0 - 8 && y < b.y1 + 8
        );
      // Alive: every second something moves (a breath, a glance, a blink); between
      // such steps the picture holds still (no shimmer), so most frames repeat.
      let prev: Uint8Array | null = null;
      const changedPerSecond = [0, 0, 0, 0, 0, 0, 0, 0];
      for (let i = 0; i < 200; i++) {
        const s = driver.next(silence);
        const f = paintOnce(own, s, driver.weights).data;
        if (i % 25 === 0) {
          const v = ssim(f, avatar.i420, W, avatar.height, skip);
          assert.ok(v >= 0.9, `frame ${i}: SSIM ${v.toFixed(3)}`);
        }
        if (prev && prev.some((x, k) => x !== f[k])) {
          changedPerSecond[Math.floor(i / 25)]++;
        }
        prev = f.slice(0, N);
      }
      assert.ok(
        changedPerSecond.every((n) => n > 0),
        `never frozen: ${changedPerSecond}`,
      );
      assert.ok(
        changedPerSecond.reduce((a, b) => a + b) < 150,
        `no shimmer: ${changedPerSecond}`,
      );
    },
  );

  await t.step(
    "a catalog background replaces the photo's; alpha moves with the head",
    () => {
      const bg = BACKGROUNDS[1];
      const p = createPhotoPainter(avatar, { bg, seed: 1 });
      const planes = backgroundPlanes(bg, W, avatar.height);
      const { state, weights } = faceWith({});
      const f = paintOnce(p, state, weights).data;
      let bgSame = 0, bgN = 0, faceDiff = 0, faceN = 0;
      for (let i = 0; i < N; i++) {
        if (avatar.alpha[i] === 0) {
          bgN++;
          if (Math.abs(f[i] - planes[i]) <= 1) bgSame++;
        }
        if (avatar.alpha[i] === 255) {
          (faceN++, faceDiff += Math.abs(f[i] - avatar.i420[i]));
        }
      }
      assert.ok(
        bgN > 1000 && bgSame / bgN > 0.97,
        `background: ${bgSame}/${bgN}`,
      );
      // The person is the photo (breathing moves it by under a pixel).
      assert.ok(
        faceDiff / faceN < 6,
        `person: mean difference ${faceDiff / faceN}`,
      );
    },
  );

  await t.step(
    "transparent: black behind the person, paintAlpha the warped alpha",
    () => {
      const p = createPhotoPainter(avatar, { bg: "transparent", seed: 1 });
      assert.ok(p.paintAlpha);
      const alpha = new Uint8Array(N);
      const still = faceWith({});
      const f = paintOnce(p, still.state, still.weights).data;
      p.paintAlpha(alpha);
      let black = 0, bgN = 0, diff = 0;
      for (let i = 0; i < N; i++) {
        if (avatar.alpha[i] === 0) (bgN++, black += f[i] === 16 ? 1 : 0);
        diff += Math.abs(alpha[i] - avatar.alpha[i]);
      }
      assert.ok(black / bgN > 0.97, `black: ${black}/${bgN}`);
      assert.ok(diff / N < 1, `at rest the alpha is the mask (${diff / N})`);
      const moved = faceWith({}, {
        head: { x: 0.06, y: 0, tilt: 0, yaw: 0, pitch: 0 },
      });
      paintOnce(p, moved.state, moved.weights);
      p.paintAlpha(alpha);
      // The head's edge moved right by a few pixels: on the head's row, the alpha's left edge.
      const row = Math.round(point(avatar, 1)[1]);
      const left = (a: Uint8Array) =>
        a.subarray(row * W, (row + 1) * W).findIndex((v) => v >= 128);
      assert.ok(
        left(alpha) - left(avatar.alpha) >= 3,
        `${left(avatar.alpha)} → ${left(alpha)}`,
      );
    },
  );

  await t.step(
    "the same seed paints the same frames; another seed breathes differently",
    () => {
      const run = (seed: number) => {
        const p = createPhotoPainter(avatar, { bg: null, seed });
        const driver = new FaceDriver(9);
        const set = new Int16Array(FRAME_SAMPLES);
        let h = 0;
        for (let i = 0; i < 30; i++) {
          const f = paintOnce(p, driver.next(set), driver.weights).data;
          for (let k = 0; k < f.length; k += 7) {
            h = (Math.imul(h, 31) + f[k]) | 0;
          }
        }
        return h;
      };
      assert.equal(run(1), run(1));
      assert.notEqual(run(1), run(2));
    },
  );
});
