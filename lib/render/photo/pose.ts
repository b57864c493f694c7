/**
 * Where every vertex of the rig goes in one frame: the jaw turns about its pivot by the
 * opening the viseme blend asks for (the lower lip and chin ride on it, the cheeks give),
 * the lips part, roll, press, spread and round, the upper lip lifts off the teeth, the
 * lids close over the eyes, the brows lift — all along the face's own axes, so a
 * turned or tilted portrait opens its mouth down its own chin — and the whole head
 * turns, nods and tilts in three dimensions about the neck (./head3d.ts) and breathes
 * over still shoulders and background.
 */
import type { FaceState } from "../face.ts";
import { polylineY, smoothstep } from "./geometry.ts";
import { headRotation } from "./head3d.ts";
import { lashAt } from "./regions.ts";
import { LIP_NONE, LIP_UPPER, type Rig } from "./rig.ts";

/** One frame's pose: vertex positions and what the mouth and eye interiors need. */
export interface Pose {
  x: Float64Array;
  y: Float64Array;
  /**
   * The head's motion as the interiors see it: one affine map of the picture fitted
   * to the motion of the eyes, nose and mouth (`aff`: X = a·x + b·y + e, Y = c·x +
   * d·y + f, as [a, b, e, c, d, f]; `inv` undoes it), its roll (cos, sin) and the
   * mouth centre's shift.
   */
  cos: number;
  sin: number;
  tx: number;
  ty: number;
  aff: Float64Array;
  inv: Float64Array;
  /** The head's 3-D rotation about the neck (row-major 3×3). */
  rot: Float64Array;
  /** How far the lower lip dropped with the jaw at the mouth's centre (px). */
  drop: number;
  /** Jaw rotation (radians). */
  theta: number;
}

/**
 * Lower-lip drop at full opening (`aa`), as a share of the face's height (forehead to
 * chin): with the lips' first parting, 0.077 of it, about 14 mm, a wide speaking "ah"
 * (speech opens the jaw 10–15 mm; 0.13 was a yawn).
 */
export const MAX_DROP = 0.065;

/** The brows' landmarks: a blink stretches the lid's skin under them, not them. */
const BROWS = new Set([
  70,
  63,
  105,
  66,
  107,
  55,
  65,
  52,
  53,
  46,
  300,
  293,
  334,
  296,
  336,
  285,
  295,
  282,
  283,
  276,
]);

/** An empty pose for `rig`. */
export function createPose(rig: Rig): Pose {
  return {
    x: new Float64Array(rig.n),
    y: new Float64Array(rig.n),
    cos: 1,
    sin: 0,
    tx: 0,
    ty: 0,
    aff: Float64Array.of(1, 0, 0, 0, 1, 0),
    inv: Float64Array.of(1, 0, 0, 0, 1, 0),
    rot: Float64Array.of(1, 0, 0, 0, 1, 0, 0, 0, 1),
    drop: 0,
    theta: 0,
  };
}

/** Vertical shift of the jaw's rotation by `theta` at rest point (y, z). */
export function jawShift(
  rig: Rig,
  y: number,
  z: number,
  theta: number,
): number {
  const Y = y - rig.pivotY, Z = z - rig.pivotZ;
  return Y * (Math.cos(theta) - 1) - Z * Math.sin(theta);
}

/**
 * Poses `rig` for `state` into `out`. `breath` is the breathing phase's offset in
 * pixels (shoulders up, head riding on them); `live` (0..1) scales the head's sway:
 * small between turns, so the idle face stays the photo, fuller while speaking.
 */
export function posePoints(
  rig: Rig,
  state: FaceState,
  breath: number,
  live: number,
  out: Pose,
): void {
  const m = state.mouth;
  const { faceH, mouthX, mouthY, mouthHw } = rig;
  // Jaw: the angle whose rotation drops the lower lip's centre by the asked opening.
  const lipY = rig.fy[14], lipZ = rig.fz[14];
  const reach = Math.hypot(lipY - rig.pivotY, lipZ - rig.pivotZ);
  // The lips part a little as soon as a sound starts (before the jaw has dropped
  // much), then the jaw does the rest.
  const drop = faceH *
    (MAX_DROP * m.open + 0.012 * smoothstep(0.02, 0.12, m.open));
  const theta = Math.asin(Math.min(0.9, drop / Math.max(1, reach)));
  out.theta = theta;
  out.drop = jawShift(rig, lipY, lipZ, theta);
  const openK = Math.min(1, m.open * 2.5);
  // Spreading (EE) pulls the cheeks along; rounding (OO) is the lips' own ring
  // muscle: it gathers the lips and barely moves the cheeks.
  const spread = mouthHw * 0.2 * (m.wide - 0.35);
  const gather = -mouthHw * 0.45 * m.round;
  // Rounded lips stand forward of the teeth and do not lift off them.
  const lift = faceH * (0.006 + 0.012 * m.teeth) * openK * (1 - 0.7 * m.round);
  const thick = 0.22 * m.round - 0.12 * Math.max(0, m.wide - 0.35) -
    0.22 * m.press;
  // Rounded lips make a ring: the upper lip rises in its middle as the lower one
  // drops (an oval opening, not the photo's straight lip line over a drop), and the
  // corners stay shut up to the inner corners, measured from the inner lips'
  // corners (61/291 are the outer ones).
  const innerHw = Math.max(1, (rig.sx[308] - rig.sx[78]) / 2) / mouthHw;
  // (Not only the jaw's share: a speech-sized jaw leaves rounded lips a slot.)
  const ring = m.round * (0.4 * out.drop + 0.012 * faceH * openK);

  const { tx, ty } = headMotion(rig, state, breath, live, out);
  const R = out.rot, am = rig.axes.m;
  const { neckX, neckY, neckZ } = rig;

  const eyeLines = rig.eyes.map((e) => ({
    e,
    ux: e.upper.map((i) => rig.fx[i]),
    uy: e.upper.map((i) => rig.fy[i]),
    lx: e.lower.map((i) => rig.fx[i]),
    ly: e.lower.map((i) => rig.fy[i]),
  }));
  const eyeTop = Math.min(...eyeLines.map((l) => Math.min(...l.uy)));
  const browTop = eyeTop - 0.3 * faceH;

  for (let i = 0; i < rig.n; i++) {
    // Posed in the face's frame, turned back onto the picture at the end.
    const sx = rig.fx[i], sy = rig.fy[i];
    let x = sx, y = sy;
    const role = rig.lip[i];
    if (rig.jawW[i] > 0) y += rig.jawW[i] * jawShift(rig, sy, rig.fz[i], theta);
    // Mouth area: corners spread or round, with the cheeks around them following.
    const u = (sx - mouthX) / mouthHw, v = (sy - mouthY) / mouthHw;
    let g = 1, gl = 1;
    if (role === LIP_NONE) {
      // Falling off faster upwards: the nose stays where it is.
      const e = Math.hypot(u * 0.85, v * (v < 0 ? 3 : 1.2));
      g = e <= 1 ? 1 : Math.exp(-(((e - 1) / 0.6) ** 2));
      // Rounding gathers the skin with a wide, smooth falloff from the lips out:
      // a plateau with a steep edge stretched the skin beside it like rubber (44 %
      // at its edge; this way at most ~13 %), in streaks and folds.
      gl = Math.exp(-((e / 1.4) ** 2));
    }
    if (g > 0.01) {
      const uc = Math.max(-1.1, Math.min(1.1, u));
      x += (spread * g + gather * gl) * uc;
      y -= 0.08 * mouthHw * Math.max(0, m.wide - 0.35) * g * uc * uc;
    }
    // The mouth opens less towards its corners (more so rounded), so the opening is
    // an oval, not a slot; the lower lip and the skin under its corners alike.
    const ui = u / (1 + (innerHw - 1) * m.round);
    const corner = Math.min(0.95, 0.7 + 0.3 * m.round) * Math.min(1, ui * ui) *
      out.drop;
    const ringAt = ring * Math.max(0, 1 - ui * ui);
    if (role === LIP_NONE && Math.abs(u) < 1.8) {
      // Beside the corners it fades out again: the cheeks go down with the jaw.
      const below = (sy - mouthY) / mouthHw;
      y -= corner * rig.jawW[i] * smoothstep(-0.15, 0.15, below) *
        Math.exp(-((below / 0.6) ** 2)) * (1 - smoothstep(1, 1.8, Math.abs(u)));
    }
    if (role !== LIP_NONE) {
      // (Capped: a lip the rest face's closing stretched is no thicker to roll,
      // press or tuck than a lip is.)
      const d = Math.min(rig.lipD[i], 0.045 * faceH);
      const curve = Math.max(0, 1 - u * u);
      if (role === LIP_UPPER) {
        // The whole upper lip rises with the ring (its thickness kept).
        y -= thick * d + lift * curve + ringAt;
      } else {
        // Pressed lips close the photo's own gap; a tucked lip rides up under the
        // upper teeth; an open jaw lets the lower lip roll out a little.
        y -= corner;
        y += thick * d + 0.15 * openK * d;
        y -= m.press * rig.lipGap[i] * curve;
        y -= m.tuck * (0.5 * d + 0.02 * faceH) * curve;
      }
    } else if (sy < mouthY && g > 0.01 && Math.abs(u) < 1) {
      // The skin above the upper lip goes up with it (less the farther up).
      y -= (lift * (1 - u * u) + ringAt) * g *
        Math.exp(-(((mouthY - sy) / (0.08 * faceH)) ** 2));
    }
    // Eyes: the upper lid comes down over the eye, the lower one up a little; the
    // skin above the lid stretches with it.
    if (state.blink > 0) {
      for (const l of eyeLines) {
        const x0 = l.ux[0], x1 = l.ux[l.ux.length - 1];
        const w = x1 - x0;
        if (sx < x0 - 0.3 * w || sx > x1 + 0.3 * w) continue;
        const yu = polylineY(l.ux, l.uy, sx), yl = polylineY(l.lx, l.ly, sx);
        const gap = Math.max(0, yl - yu);
        const inside = sx > x0 && sx < x1;
        const hx = inside ? 1 : 1 -
          smoothstep(
            0,
            0.3 * w,
            Math.min(Math.abs(sx - x0), Math.abs(sx - x1)),
          );
        if (l.e.upper.includes(i) && inside) y += state.blink * 0.85 * gap;
        else if (l.e.lower.includes(i) && inside) y -= state.blink * 0.15 * gap;
        else if (sy < yu && sy > yu - 1.5 * l.e.gap && !BROWS.has(i)) {
          // The lashes above the line go down whole with it; the lid's skin above
          // them stretches, less the farther up.
          const lash = lashAt(l.e, rig.sx[i]) + 0.25;
          const d = Math.min(
            1,
            Math.max(0, yu - sy - lash) / (1.5 * l.e.gap - lash),
          );
          y += state.blink * 0.85 * gap * hx * (1 - d) ** 2;
        } else if (sy > yl && sy < yl + 0.9 * l.e.gap) {
          y -= state.blink * 0.15 * gap * hx *
            (1 - (sy - yl) / (0.9 * l.e.gap));
        }
      }
    }
    // Brows: the forehead above the eyes lifts on stress.
    if (
      state.brow > 0 && i < 468 && sy < eyeTop && sy > browTop - 0.2 * faceH
    ) {
      y -= state.brow * 0.012 * faceH *
        smoothstep(eyeTop, eyeTop - 0.12 * faceH, sy);
    }
    // Back onto the picture: the face-frame offset along the face's axes.
    const ix = rig.sx[i], iy = rig.sy[i], dx = x - sx, dy = y - sy;
    x = ix + am[0] * dx + am[1] * dy;
    y = iy + am[3] * dx + am[4] * dy;
    // The head carries all that, turned in depth about the neck; the shoulders
    // breathe.
    const hw = rig.headW[i];
    if (hw > 0) {
      const X = x - neckX, Y = y - neckY;
      const Z = rig.z[i] + am[6] * dx + am[7] * dy - neckZ;
      const hx = neckX + R[0] * X + R[1] * Y + R[2] * Z + tx;
      const hy = neckY + R[3] * X + R[4] * Y + R[5] * Z + ty;
      x += hw * (hx - x);
      y += hw * (hy - y);
    }
    if (iy > neckY && iy > 0 && iy < rig.height && ix > 0 && ix < rig.width) {
      y += (1 - hw) * breath * smoothstep(neckY, neckY + 0.3 * faceH, iy);
    }
    out.x[i] = x;
    out.y[i] = y;
  }
}

/** Largest yaw and pitch the painter turns a photographed head by (radians). */
export const MAX_YAW = 0.16, MAX_PITCH = 0.1, MAX_ROLL = 0.09;

/**
 * The head's motion of this frame into `out`: its rotation (yaw and pitch from the
 * state, its tilt as roll, each bounded so the hairline and the ears do not tear), the
 * shift (whole pixels) with the breath under it, and the affine map of it that the
 * interiors undo (fitted at the rig's `fitIdx` landmarks). Returns the shift.
 */
function headMotion(
  rig: Rig,
  state: FaceState,
  breath: number,
  live: number,
  out: Pose,
): { tx: number; ty: number } {
  const h = state.head;
  const clamp = (v: number, m: number) => Math.max(-m, Math.min(m, v));
  // Steps of 1/1024 rad: a still head is not resampled at a new sub-pixel offset every
  // frame (which would shimmer).
  const q = (v: number) => Math.round(v * 1024) / 1024;
  headRotation(
    q(clamp(h.yaw, MAX_YAW)),
    q(clamp(h.pitch, MAX_PITCH)),
    q(clamp(h.tilt, MAX_ROLL)),
    out.rot,
  );
  // A photographed head over a still background reads best shifting little: it turns.
  // (By a share of the face's own size, whatever the framing: 1.75 faces is about a
  // square portrait's side.)
  const sway = 0.5 + 0.5 * live, unit = 1.75 * rig.faceH;
  const tx = Math.round(0.3 * sway * h.x * unit);
  const ty = Math.round(0.4 * sway * h.y * unit + 0.4 * breath);
  const R = out.rot, S = rig.headFit, idx = rig.fitIdx, k = idx.length;
  const a = out.aff;
  a.fill(0);
  for (let j = 0; j < k; j++) {
    const i = idx[j];
    const X = rig.sx[i] - rig.neckX, Y = rig.sy[i] - rig.neckY;
    const Z = rig.z[i] - rig.neckZ;
    const hx = rig.neckX + R[0] * X + R[1] * Y + R[2] * Z + tx;
    const hy = rig.neckY + R[3] * X + R[4] * Y + R[5] * Z + ty;
    for (let r = 0; r < 3; r++) {
      a[r] += S[r * k + j] * hx;
      a[3 + r] += S[r * k + j] * hy;
    }
  }
  // Rounded off: a head at rest maps every pixel onto itself exactly.
  for (let r = 0; r < 6; r++) a[r] = Math.round(a[r] * 1e9) / 1e9;
  // The inverse of [[a, b, e], [c, d, f]].
  const det = a[0] * a[4] - a[1] * a[3];
  const v = out.inv;
  v[0] = a[4] / det, v[1] = -a[1] / det, v[3] = -a[3] / det, v[4] = a[0] / det;
  v[2] = -(v[0] * a[2] + v[1] * a[5]);
  v[5] = -(v[3] * a[2] + v[4] * a[5]);
  const roll = Math.atan2(a[3], a[0]);
  out.cos = Math.cos(roll), out.sin = Math.sin(roll);
  out.tx = a[0] * rig.mouthX + a[1] * rig.mouthY + a[2] - rig.mouthX;
  out.ty = a[3] * rig.mouthX + a[4] * rig.mouthY + a[5] - rig.mouthY;
  return { tx, ty };
}

/**
 * Head-space point of a frame point (the head's motion undone through its affine
 * view `pose.inv`), into `p`.
 */
export function unhead(
  pose: Pose,
  _rig: Rig,
  X: number,
  Y: number,
  p: Float64Array,
): void {
  const v = pose.inv;
  p[0] = v[0] * X + v[1] * Y + v[2];
  p[1] = v[3] * X + v[4] * Y + v[5];
}
