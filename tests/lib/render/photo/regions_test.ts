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
  LASH_MOST,
  reachAt,
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

/**
 * Skin (luma 170) with an eye and lashes `lash` px thick above its upper lid; a rim
 * of glasses 2 px thick from `rim` px above the lid line, if given.
 */
function portrait(lash: number, rim = 0): PhotoAvatar {
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
      else if (rim && y <= yu - rim && y > yu - rim - 2) i420[y * W + x] = 20;
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

Deno.test("eyeRig() finds where the lid's skin ends under a rim of glasses", () => {
  for (const rim of [7, 9]) {
    const e = eyeRig(portrait(3, rim), UPPER, LOWER, sx, sy);
    for (const x of [75, 90, 105]) {
      const top = riseAt(e, x) + reachAt(e, x);
      assert.ok(
        Math.abs(top - rim) <= 1,
        `rim ${rim} px above the lid: the skin ends ${top} px above at x ${x}`,
      );
    }
  }
  // No rim: the skin reaches 1.5 gaps above the lid line.
  const bare = eyeRig(portrait(3), UPPER, LOWER, sx, sy);
  assert.ok(riseAt(bare, 90) + reachAt(bare, 90) >= 17);
});

Deno.test("a blink moves nothing past the lid's skin: a rim of glasses close above stays", async () => {
  // Grace Hopper's glasses: their dark rim lies 0.7–0.8 of the eye's gap above her
  // lids (the blink dragged it down into an arch over the closed eye).
  const rig = buildRig(await testAvatar());
  const pose = createPose(rig);
  posePoints(rig, { ...restingFace(), blink: 1 }, 0, 0, pose);
  let still = 0;
  for (const e of rig.eyes) {
    const ux = e.upper.map((i) => rig.sx[i]),
      uy = e.upper.map((i) => rig.sy[i]);
    for (let i = 0; i < rig.n; i++) {
      const x = rig.sx[i];
      if (x <= ux[0] + 1 || x >= ux[ux.length - 1] - 1) continue;
      const above = polylineY(ux, uy, x) - rig.sy[i];
      const top = riseAt(e, x) + reachAt(e, x);
      if (above < top + 0.5 || above > 2 * e.gap) continue;
      still++;
      const moved = Math.hypot(pose.x[i] - rig.sx[i], pose.y[i] - rig.sy[i]);
      assert.ok(
        moved < 0.3,
        `point ${i} ${above.toFixed(1)} px above the lid (skin ends ${
          top.toFixed(1)
        }): moved ${moved.toFixed(2)} px`,
      );
    }
  }
  assert.ok(still >= 6, `points past the lid's skin: ${still}`);
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
        const rise = Math.min(riseAt(e, x), LASH_MOST * e.gap);
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
