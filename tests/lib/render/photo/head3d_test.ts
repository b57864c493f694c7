import assert from "node:assert/strict";
import {
  axesAngles,
  headRotation,
  measuredAxes,
} from "../../../../lib/render/photo/head3d.ts";
import { testAvatar } from "./_avatar.ts";

const avatar = await testAvatar();

Deno.test("measuredAxes() reads a head turned in depth by its true angles", () => {
  const l = avatar.landmarks, n = l.length / 3;
  const px = new Float64Array(n),
    py = new Float64Array(n),
    pz = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    px[i] = l[i * 3], py[i] = l[i * 3 + 1], pz[i] = l[i * 3 + 2];
  }
  const rest = axesAngles(measuredAxes(px, py, pz));
  const R = new Float64Array(9);
  const deg = 180 / Math.PI;
  for (
    const [yaw, pitch, roll] of [[8, 0, 0], [-8, 0, 0], [0, 6, 0], [0, 0, 5], [
      6,
      -4,
      3,
    ]]
  ) {
    headRotation(yaw / deg, pitch / deg, roll / deg, R);
    const x = new Float64Array(n),
      y = new Float64Array(n),
      z = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      x[i] = R[0] * px[i] + R[1] * py[i] + R[2] * pz[i];
      y[i] = R[3] * px[i] + R[4] * py[i] + R[5] * pz[i];
      z[i] = R[6] * px[i] + R[7] * py[i] + R[8] * pz[i];
    }
    const a = axesAngles(measuredAxes(x, y, z));
    const got = [a.yaw - rest.yaw, a.pitch - rest.pitch, a.roll - rest.roll]
      .map((v) => Math.abs(v * deg));
    const want = [yaw, pitch, roll].map(Math.abs);
    for (let k = 0; k < 3; k++) {
      assert.ok(
        Math.abs(got[k] - want[k]) <= 0.15 * want[k] + 0.5,
        `turned ${[yaw, pitch, roll]}°: read ${got.map((v) => v.toFixed(1))}°`,
      );
    }
  }
});
