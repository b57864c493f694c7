/**
 * What the rig reads off an eye (lib/render/photo/regions.ts): how far above the upper
 * lid line the lid's own skin begins, past the lashes — a closing lid is drawn from
 * there (./eyes.ts), not from heavy or made-up lashes stretched over the eye; and a
 * blink carries those lashes down whole (pose.ts).
 */
import assert from "node:assert/strict";
import { polylineY } from "../../../../lib/render/photo/geometry.ts";
import { IRIS_START } from "../../../../lib/render/photo/landmarks.ts";
import {
  eyeRig,
  lashAt,
  lidKnots,
  riseAt,
} from "../../../../lib/render/photo/regions.ts";
import type { PhotoAvatar } from "../../../../lib/render/photo/types.ts";
import { createPose, posePoints } from "../../../../lib/render/photo/pose.ts";
import { buildRig } from "../../../../lib/render/photo/rig.ts";
import { restingFace } from "../../../../lib/render/face.ts";
import { smileAvatar, testAvatar } from "./_avatar.ts";

const W = 200, H = 200;
// The eye: corners at (60, 106) and (120, 106), the upper lid at y 100 in the
// middle, the lower at 112 (a gap of 12 px).
const sx = Float64Array.from([60, 75, 90, 105, 120, 75, 90, 105]);
const sy = Float64Array.from([106, 101, 100, 101, 106, 111, 112, 111]);
const UPPER = [0, 1, 2, 3, 4], LOWER = [0, 5, 6, 7, 4];

/** Skin (luma 170) with an eye and lashes `lash` px thick above its upper lid. */
function portrait(lash: number): PhotoAvatar {
  const i420 = new Uint8Array(W * H * 3 / 2).fill(128);
  i420.fill(170, 0, W * H);
  const ux = UPPER.map((i) => sx[i]), uy = UPPER.map((i) => sy[i]);
  const lx = LOWER.map((i) => sx[i]), ly = LOWER.map((i) => sy[i]);
  for (let x = 60; x <= 120; x++) {
    const yu = polylineY(ux, uy, x), yl = polylineY(lx, ly, x);
    for (let y = 0; y < H; y++) {
      // The white, the iris (radius 5 about (90, 106)), the lashes above.
      if (y >= yu && y <= yl) {
        i420[y * W + x] = Math.hypot(x - 90, y - 106) < 5 ? 40 : 220;
      } else if (y < yu && y >= yu - lash) i420[y * W + x] = 35;
    }
  }
  const landmarks = new Float32Array(478 * 3);
  for (const c of [IRIS_START, IRIS_START + 5]) {
    landmarks[c * 3] = 90, landmarks[c * 3 + 1] = 106;
    for (let k = 1; k < 5; k++) {
      landmarks[(c + k) * 3] = 90 + 5 * Math.cos(k * Math.PI / 2);
      landmarks[(c + k) * 3 + 1] = 106 + 5 * Math.sin(k * Math.PI / 2);
    }
  }
  return {
    avatarId: "ph_REGIONS000000000000000000",
    tenantId: "t",
    name: "eye",
    createdAt: 0,
    width: W,
    height: H,
    i420,
    alpha: new Uint8Array(W * H).fill(255),
    landmarks,
  };
}

Deno.test("eyeRig() finds the lid's skin above the lashes, however thick they are", () => {
  for (const lash of [2, 3, 5]) {
    const e = eyeRig(portrait(lash), UPPER, LOWER, sx, sy);
    assert.equal(e.gap, 12);
    // Away from the corners (where the five-column smoothing meets the ends).
    for (const x of [75, 90, 105]) {
      const rise = riseAt(e, x);
      assert.ok(
        Math.abs(rise - lash) <= 1,
        `lashes ${lash} px: the skin found ${rise} px above the lid at x ${x}`,
      );
    }
  }
  // No lashes darker than the skin: the skin starts just above the lid line.
  const bare = eyeRig(portrait(0), UPPER, LOWER, sx, sy);
  assert.ok(riseAt(bare, 90) <= 1, `bare lid: ${riseAt(bare, 90)} px`);
});

Deno.test("the lashes a blink carries whole are one height across the eye, never above a column's own", () => {
  // Lashes 5 px thick but 2 px in every other run of columns: a knot per column at
  // its own height zigzagged into spikes over a closed lid (cg-029354, cg-021736).
  const a = portrait(5);
  for (let x = 60; x <= 120; x++) {
    if (Math.floor(x / 6) % 2) continue;
    const yu = polylineY(UPPER.map((i) => sx[i]), UPPER.map((i) => sy[i]), x);
    for (let y = Math.ceil(yu - 5); y < yu - 2; y++) a.i420[y * W + x] = 170;
  }
  const e = eyeRig(a, UPPER, LOWER, sx, sy);
  assert.ok(e.lash > 1.5 && e.lash <= 0.4 * e.gap + 1e-9, `lash ${e.lash}`);
  const knots = lidKnots(e, UPPER, LOWER, sx, sy);
  const heights: number[] = [];
  for (const [x, y] of knots) {
    const above = polylineY(
      UPPER.map((i) => sx[i]),
      UPPER.map((i) => sy[i]),
      x,
    ) -
      y;
    if (above <= 0 || above >= 0.6 * e.gap) continue; // the bands
    heights.push(above);
    assert.ok(above <= riseAt(e, x) + 1 + 1e-9, `knot ${above} above ${x}`);
  }
  assert.equal(heights.length, 5);
  assert.ok(
    Math.max(...heights) - Math.min(...heights) <= 1.5,
    `knot heights ${heights.map((h) => h.toFixed(1))}`,
  );
  // A lid where no skin shows above the lashes (deep shade): nothing carried whole.
  assert.equal(eyeRig(portrait(9), UPPER, LOWER, sx, sy).lash, 0);
});

Deno.test("a blink carries the lashes down whole with the lid line: only the skin above them stretches", async () => {
  for (const avatar of [await testAvatar(), await smileAvatar()]) {
    const rig = buildRig(avatar);
    const pose = createPose(rig);
    posePoints(rig, { ...restingFace(), blink: 1 }, 0, 0, pose);
    let knots = 0;
    for (const e of rig.eyes) {
      const ux = e.upper.map((i) => rig.sx[i]),
        uy = e.upper.map((i) => rig.sy[i]);
      const px = e.upper.map((i) => pose.x[i]),
        py = e.upper.map((i) => pose.y[i]);
      // The rig's knots where the lashes end above the lid line (riseAt).
      for (let i = IRIS_START + 10; i < rig.n; i++) {
        const x = rig.sx[i];
        if (x <= ux[0] || x >= ux[ux.length - 1]) continue;
        const rise = lashAt(e, x);
        if (Math.abs(polylineY(ux, uy, x) - rise - rig.sy[i]) > 1e-6) continue;
        knots++;
        // Closed, the band between the moved lid line and the knot is as tall as
        // the photo's (stretched with the skin above, it was twice as tall).
        const band = polylineY(px, py, pose.x[i]) - pose.y[i];
        assert.ok(
          Math.abs(band - rise) <= 0.15 * rise + 0.3,
          `${avatar.name}: lashes ${rise.toFixed(1)} px tall in the photo, ${
            band.toFixed(1)
          } px closed`,
        );
      }
    }
    assert.ok(knots >= 4, `${avatar.name}: ${knots} lash knots`);
  }
});
