import assert from "node:assert/strict";
import { FaceDriver, seededRandom } from "../../../../lib/render/face.ts";
import { HeadMotion } from "../../../../lib/render/motion.ts";
import { createPhotoPainter } from "../../../../lib/render/photo/mod.ts";
import {
  createPose,
  posePoints,
  unhead,
} from "../../../../lib/render/photo/pose.ts";
import { buildRig, type Rig } from "../../../../lib/render/photo/rig.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import { polylineY } from "../../../../lib/render/photo/geometry.ts";
import { bilinear } from "../../../../lib/render/photo/warp.ts";
import { FRAME_SAMPLES, loadSet } from "../../../../scripts/lipsync/set.ts";
import {
  faceWith,
  paintOnce,
  point,
  smileAvatar,
  testAvatar,
  tiltedAvatar,
} from "./_avatar.ts";

const avatar = await testAvatar();
const rig = buildRig(avatar);
const W = avatar.width;

/**
 * The head's rotation in a pose, measured from the posed landmarks: the orthographic
 * map of the rest landmarks' 3-D positions onto their posed image positions, fitted by
 * least squares over the head's rigid points (not the lips, the jaw or the lids); its
 * rows are the rotation's first two. Yaw, pitch and roll in degrees.
 */
function measuredAngles(r: Rig, x: Float64Array, y: Float64Array) {
  const idx: number[] = [];
  for (let i = 0; i < 468; i++) {
    if (r.jawW[i] === 0 && r.lip[i] === 0 && r.headW[i] === 1) idx.push(i);
  }
  const solve = (target: Float64Array) => {
    // Normal equations of target ≈ a·x + b·y + c·z + d.
    const M = Array.from({ length: 4 }, () => [0, 0, 0, 0, 0]);
    for (const i of idx) {
      const v = [r.sx[i], r.sy[i], r.z[i], 1];
      for (let p = 0; p < 4; p++) {
        for (let q = 0; q < 4; q++) M[p][q] += v[p] * v[q];
        M[p][4] += v[p] * target[i];
      }
    }
    for (let c = 0; c < 4; c++) {
      let piv = c;
      for (let k = c + 1; k < 4; k++) {
        if (Math.abs(M[k][c]) > Math.abs(M[piv][c])) piv = k;
      }
      [M[c], M[piv]] = [M[piv], M[c]];
      for (let k = 0; k < 4; k++) {
        if (k === c) continue;
        const f = M[k][c] / M[c][c];
        for (let q = c; q < 5; q++) M[k][q] -= f * M[c][q];
      }
    }
    return [0, 1, 2].map((k) => M[k][4] / M[k][k]);
  };
  const r0 = solve(x), r1 = solve(y);
  const r2 = [
    r0[1] * r1[2] - r0[2] * r1[1],
    r0[2] * r1[0] - r0[0] * r1[2],
    r0[0] * r1[1] - r0[1] * r1[0],
  ];
  const deg = 180 / Math.PI;
  return {
    yaw: Math.asin(Math.max(-1, Math.min(1, r2[0]))) * deg,
    pitch: Math.atan2(r2[1], r2[2]) * deg,
    roll: Math.atan2(r1[0], r0[0]) * deg,
  };
}

function spread(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length * 0.95)] - s[Math.floor(s.length * 0.05)];
}

Deno.test("a talking photo head turns and nods in depth: yaw ≥ 6°, pitch ≥ 4°, roll ≥ 3° (p5–p95)", async () => {
  const set = await loadSet();
  const pose = createPose(rig);
  const yaw: number[] = [], pitch: number[] = [], roll: number[] = [];
  const driver = new FaceDriver(11);
  for (const u of set) {
    for (let i = 0; i < u.labels.length; i++) {
      const s = driver.next(
        u.pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES),
      );
      if (u.labels[i] === "sil") continue;
      posePoints(rig, s, 0, 1, pose);
      const a = measuredAngles(rig, pose.x, pose.y);
      yaw.push(a.yaw), pitch.push(a.pitch), roll.push(a.roll);
    }
  }
  assert.ok(yaw.length > 200, `talking frames: ${yaw.length}`);
  const r = { yaw: spread(yaw), pitch: spread(pitch), roll: spread(roll) };
  const msg = JSON.stringify(r);
  assert.ok(r.yaw >= 6, msg);
  assert.ok(r.pitch >= 4, msg);
  assert.ok(r.roll >= 3, msg);
  // Bounded: the hairline and the ears do not tear.
  assert.ok(Math.max(...yaw.map(Math.abs)) <= 9, msg);
});

Deno.test("every sentence moves the head: 6 s of talk turn, nod and tilt it over most of the range, whatever the session's seed", () => {
  const deg = 180 / Math.PI;
  const least = { yaw: Infinity, pitch: Infinity, roll: Infinity };
  for (let seed = 1; seed <= 40; seed++) {
    const m = new HeadMotion(seededRandom(seed), 25);
    const out = { x: 0, y: 0, yaw: 0, pitch: 0, tilt: 0 };
    const yaw: number[] = [], pitch: number[] = [], roll: number[] = [];
    for (let i = 0; i < 25 * 8; i++) {
      const speaking = i >= 25 && i < 25 * 7;
      m.next({ speaking, level: 0.5, emphasis: 0 }, out);
      if (!speaking) continue;
      yaw.push(out.yaw * deg), pitch.push(out.pitch * deg);
      roll.push(out.tilt * deg);
    }
    least.yaw = Math.min(least.yaw, spread(yaw));
    least.pitch = Math.min(least.pitch, spread(pitch));
    least.roll = Math.min(least.roll, spread(roll));
  }
  // (Before, with knots drawn independently: 4.5°, 1.4° and 1.9° at the least.)
  // Yaw: a face mesh reads less than the commanded turn back off the decoded video
  // (photo:eval), so each swing goes at least 0.55 of the way out (6.2° at the least
  // when it was 0.35; the largest turn stays as it was, within the tearing bound).
  const msg = JSON.stringify(least);
  assert.ok(least.yaw >= 6.8, msg);
  assert.ok(least.pitch >= 2.8, msg);
  assert.ok(least.roll >= 2.8, msg);
});

Deno.test("the jaw leaves the collar and the tie where they are", () => {
  const p = createPhotoPainter(avatar, { bg: null, seed: 3 });
  const rest = faceWith({});
  const open = faceWith({ [visemeIndex("aa")]: 1 });
  const a = paintOnce(p, rest.state, rest.weights).data;
  const b = paintOnce(p, open.state, open.weights).data;
  const [cx, cy] = point(avatar, 152);
  const y0 = Math.round(cy + 0.3 * rig.faceH),
    y1 = Math.round(cy + 0.55 * rig.faceH);
  const x0 = Math.round(cx - 0.5 * rig.faceW),
    x1 = Math.round(cx + 0.5 * rig.faceW);
  let diff = 0, n = 0;
  for (let y = y0; y < Math.min(W, y1); y++) {
    for (let x = x0; x < x1; x++) {
      (diff += Math.abs(a[y * W + x] - b[y * W + x]), n++);
    }
  }
  assert.ok(diff / n < 0.5, `mean luma change below the chin: ${diff / n}`);
});

Deno.test("a tilted portrait opens its mouth down its own chin, not the picture's rows", async () => {
  const tilted = await tiltedAvatar();
  const r = buildRig(tilted);
  const pose = createPose(r);
  const { state } = faceWith({ [visemeIndex("aa")]: 1 });
  posePoints(r, state, 0, 0, pose);
  // The face's down axis: square to the line through the eyes' outer corners.
  const down = -Math.atan2(r.sy[263] - r.sy[33], r.sx[263] - r.sx[33]);
  assert.ok(Math.abs(down) > 0.1, `the portrait is tilted: ${down}`);
  for (const i of [14, 17, 152]) {
    const dx = pose.x[i] - r.sx[i], dy = pose.y[i] - r.sy[i];
    assert.ok(Math.hypot(dx, dy) > 5, `landmark ${i} moved`);
    const along = Math.atan2(dx, dy);
    assert.ok(
      Math.abs(along - down) < 0.06,
      `landmark ${i} moved at ${along.toFixed(3)} rad, the face's down ${
        down.toFixed(3)
      }`,
    );
  }
});

Deno.test("while the user speaks the photo head listens: it nods, never frozen, and rests still otherwise", () => {
  const silence = new Int16Array(FRAME_SAMPLES);
  const pitchOf = (listen: boolean) => {
    const d = new FaceDriver(21);
    d.listen(listen);
    const v: number[] = [];
    for (let i = 0; i < 250; i++) v.push(d.next(silence).head.pitch);
    return v;
  };
  const heard = pitchOf(true), idle = pitchOf(false);
  const range = (v: number[]) => Math.max(...v) - Math.min(...v);
  assert.ok(range(heard) >= 0.03, `listening nods: ${range(heard)}`);
  assert.ok(
    range(heard) > 2 * range(idle),
    `${range(heard)} vs ${range(idle)}`,
  );
  // Nods: at least two in ten seconds, at irregular intervals.
  const tops: number[] = [];
  for (let i = 1; i < heard.length - 1; i++) {
    if (
      heard[i] > heard[i - 1] && heard[i] >= heard[i + 1] &&
      heard[i] - Math.min(...heard.slice(Math.max(0, i - 12), i)) > 0.02
    ) tops.push(i);
  }
  assert.ok(tops.length >= 2, `nods at ${tops}`);
  const gaps = tops.slice(1).map((t, k) => t - tops[k]);
  assert.ok(gaps.length < 2 || new Set(gaps).size > 1, `nod gaps ${gaps}`);
  // Between turns, never frozen: the head moves at least every five seconds.
  for (let s = 0; s + 125 <= idle.length; s += 25) {
    const w = idle.slice(s, s + 125);
    assert.ok(range(w) > 0, `still from frame ${s}`);
  }
});

Deno.test("a question raises the photo head; a statement's end settles it", async () => {
  const [u] = await loadSet();
  const run = (text: string) => {
    const d = new FaceDriver(8);
    d.text(text);
    const v: number[] = [];
    for (let i = 0; i < Math.min(90, u.labels.length); i++) {
      v.push(
        d.next(u.pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES)).head
          .pitch,
      );
    }
    return v;
  };
  const q = run("Is that right?"), s = run("That is right.");
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  // From the text's last third on: raised (pitch up is negative).
  const from = 20;
  assert.ok(
    mean(s.slice(from)) - mean(q.slice(from)) >= 0.015,
    `question ${mean(q.slice(from))} vs statement ${mean(s.slice(from))}`,
  );
});

Deno.test("a turned head's closed mouth carries the portrait's own lip line, no seam of the rest frame", async () => {
  const a = await smileAvatar();
  const r = buildRig(a);
  const p = createPhotoPainter(a, { bg: null, seed: 3 });
  const { state, weights } = faceWith({}, {
    head: { x: 0, y: 0, tilt: 0, yaw: 0.08, pitch: 0.05 },
  });
  const f = paintOnce(p, state, weights).data;
  const pose = createPose(r);
  posePoints(r, state, 0, 0, pose);
  const up = [78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308];
  const lo = [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308];
  const w = a.width, q = new Float64Array(2);
  let diff = 0, n = 0;
  // Along the posed lip line (the rest face's lips meet there; 3 px either side),
  // the frame against the portrait's own pixel there, the head's motion undone.
  const ux = up.map((i) => pose.x[i]), uy = up.map((i) => pose.y[i]);
  const lx = lo.map((i) => pose.x[i]), ly = lo.map((i) => pose.y[i]);
  for (let x = Math.ceil(ux[2]); x < ux[ux.length - 3]; x++) {
    const y0 = polylineY(ux, uy, x + 0.5), y1 = polylineY(lx, ly, x + 0.5);
    const top = Math.min(y0, y1) - 3, bottom = Math.max(y0, y1) + 3;
    for (let y = Math.ceil(top); y < bottom; y++) {
      unhead(pose, r, x + 0.5, y + 0.5, q);
      const want = bilinear(a.i420, w, a.height, q[0] - 0.5, q[1] - 0.5);
      diff += Math.abs(f[y * w + x] - want);
      n++;
    }
  }
  assert.ok(n > 50, `pixels between the lips: ${n}`);
  assert.ok(
    diff / n < 12,
    `lip line off by ${(diff / n).toFixed(1)} on average`,
  );
});
