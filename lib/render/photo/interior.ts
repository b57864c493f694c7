/**
 * What the warp cannot take from the photo: the inside of the open mouth (the upper
 * teeth fixed to the skull, the lower teeth and the tongue riding on the jaw, a cavity
 * darker towards the back, the upper lip's shadow, all in the tones of the photo's own
 * lips and skin), the eyes behind the moving lids (the eyeball from the photo, the iris
 * moved by the gaze), and the shade under the lower lip that deepens as the jaw drops.
 */
import type { FaceState } from "../face.ts";
import { polylineY, smoothstep } from "./geometry.ts";
import {
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
  LIP_OUTER_LOWER,
} from "./landmarks.ts";
import { type Pose, unhead } from "./pose.ts";
import type { EyeRig, Rig } from "./rig.ts";
import { bilinear, type WarpSource } from "./warp.ts";

/** A contour's frame points, x increasing. */
interface Line {
  x: Float64Array;
  y: Float64Array;
}

function line(
  idx: readonly number[],
  xs: Float64Array,
  ys: Float64Array,
): Line {
  return {
    x: Float64Array.from(idx, (i) => xs[i]),
    y: Float64Array.from(idx, (i) => ys[i]),
  };
}

/** A colour being shaded (reused, no allocation per pixel). */
interface Px {
  y: number;
  u: number;
  v: number;
}

/**
 * Fills the region between the frame polylines `up` and `lo` (sharing their corners):
 * `shade(x, y, px)` colours the point (x, y); edges are blended by vertical coverage,
 * and each column by `reveal(x, gap)` (0 keeps what is there).
 * Luma at every pixel, chroma at each 2×2 block's centre.
 */
function fillLens(
  out: Uint8Array,
  w: number,
  h: number,
  up: Line,
  lo: Line,
  shade: (x: number, y: number, px: Px) => void,
  reveal: (x: number, gap: number) => number = () => 1,
): void {
  const px: Px = { y: 0, u: 0, v: 0 };
  const x0 = Math.max(0, Math.floor(Math.min(up.x[0], lo.x[0])));
  const x1 = Math.min(
    w,
    Math.ceil(Math.max(up.x[up.x.length - 1], lo.x[lo.x.length - 1])),
  );
  const cw = w >> 1, uOff = w * h, vOff = uOff + cw * (h >> 1);
  for (let scale = 1; scale <= 2; scale++) {
    for (let X = x0 - (x0 % scale); X < x1; X += scale) {
      const xc = X + scale / 2;
      const yu = polylineY(up.x, up.y, xc), yl = polylineY(lo.x, lo.y, xc);
      if (yl - yu < 0.05) continue;
      const k = reveal(xc, yl - yu);
      if (k <= 0) continue;
      const r0 = Math.max(0, Math.floor(yu / scale - 0.5)),
        r1 = Math.min(h / scale, Math.ceil(yl / scale + 0.5));
      for (let r = r0; r < r1; r++) {
        const yc = (r + 0.5) * scale;
        // Pixels centred inside are the mesh's hole (no triangle wrote them): filled
        // whole; those centred just outside belong to the lips: blended by how much
        // of them the opening covers.
        const top = yc >= yu ? 1 : Math.max(0, 0.5 - (yu - yc) / scale);
        const bottom = yc < yl ? 1 : Math.max(0, 0.5 - (yc - yl) / scale);
        const cov = top * bottom * Math.min(1, (yl - yu) / scale) * k;
        if (cov <= 0) continue;
        shade(xc, yc, px);
        if (scale === 1) {
          const i = r * w + X;
          out[i] += (px.y - out[i]) * cov;
        } else {
          const i = r * cw + X / 2;
          out[uOff + i] += (px.u - out[uOff + i]) * cov;
          out[vOff + i] += (px.v - out[vOff + i]) * cov;
        }
      }
    }
  }
}

/** Multiplies luma by `f(x, y)` (< 1 darkens) between two rows around a frame curve. */
function darken(
  out: Uint8Array,
  w: number,
  h: number,
  x0: number,
  x1: number,
  y0: (x: number) => number,
  depth: number,
  f: (x: number, t: number) => number,
): void {
  for (
    let X = Math.max(0, Math.floor(x0));
    X < Math.min(w, Math.ceil(x1));
    X++
  ) {
    const top = y0(X + 0.5);
    for (
      let Y = Math.max(0, Math.floor(top));
      Y < Math.min(h, Math.ceil(top + depth));
      Y++
    ) {
      const t = (Y + 0.5 - top) / depth;
      if (t < 0 || t > 1) continue;
      const i = Y * w + X;
      out[i] = 16 + (out[i] - 16) * f(X + 0.5, t);
    }
  }
}

const TOOTH_EDGES = [0, 0.2, 0.36, 0.5, 0.62, 0.72];

/**
 * A tooth's shading at mouth position `u` (−1..1), teeth `spacing` wide (1 upper,
 * narrower lower): each tooth rounded (lit in its middle, darker towards its sides),
 * the gaps between them dark over a pixel or so; and how much its biting edge rises
 * near its sides (0..1), so the row's lower edge is scalloped, not ruled.
 */
function toothShade(
  u: number,
  hw: number,
  spacing: number,
): { k: number; lift: number } {
  const a = Math.abs(u) / spacing;
  let i = 0;
  while (i < TOOTH_EDGES.length - 1 && a > TOOTH_EDGES[i + 1]) i++;
  const lo = TOOTH_EDGES[i],
    hi = TOOTH_EDGES[Math.min(i + 1, TOOTH_EDGES.length - 1)];
  const width = Math.max(1e-3, hi - lo);
  const f = Math.min(1, Math.max(0, (a - lo) / width));
  const gapPx = Math.min(f, 1 - f) * width * spacing * hw;
  const k = (0.9 + 0.1 * Math.sin(Math.PI * f)) *
    (1 - 0.15 * Math.max(0, 1 - gapPx / 0.7));
  return { k, lift: 1 - Math.sin(Math.PI * f) };
}

/** Scratch per painter, so frames allocate nothing. */
export interface InteriorScratch {
  p: Float64Array;
}

/** Draws the mouth's inside and the shade under the lower lip into `out`. */
export function drawMouth(
  rig: Rig,
  pose: Pose,
  state: FaceState,
  src: WarpSource,
  out: Uint8Array,
  scratch: InteriorScratch,
): void {
  const w = rig.width, h = rig.height;
  const up = line(LIP_INNER_UPPER, pose.x, pose.y);
  const lo = line(LIP_INNER_LOWER, pose.x, pose.y);
  const mid = LIP_INNER_UPPER.length >> 1;
  const gap = lo.y[mid] - up.y[mid];
  const m = state.mouth;
  const { faceH, mouthHw, skin, lipTone: lip } = rig;
  // The photo's own lips may be a little apart at rest: only what opens beyond that
  // is drawn, so a closed mouth is the photo's own.
  const restUp = line(LIP_INNER_UPPER, rig.sx, rig.sy);
  const restLo = line(LIP_INNER_LOWER, rig.sx, rig.sy);
  const restGap = (x: number) =>
    polylineY(restLo.x, restLo.y, x - pose.tx) -
    polylineY(restUp.x, restUp.y, x - pose.tx);
  const opened = gap - (restLo.y[mid] - restUp.y[mid]);
  const openF = smoothstep(0.5, 5, opened);
  if (opened > 0.3) {
    // Head-space lines (the head's motion undone): the teeth hang from the skull.
    const hUp = line(LIP_INNER_UPPER, pose.x, pose.y),
      hLo = line(LIP_INNER_LOWER, pose.x, pose.y);
    const p = scratch.p;
    for (const l of [hUp, hLo]) {
      for (let k = 0; k < l.x.length; k++) {
        unhead(pose, rig, l.x[k], l.y[k], p);
        l.x[k] = p[0], l.y[k] = p[1];
      }
    }
    const rest = restUp;
    const showU = faceH * (0.008 + 0.014 * m.teeth);
    const showL = faceH * (0.012 + 0.016 * m.lowerTeeth);
    // Lower teeth once the lips are well apart (a sliver would read as a line).
    const lowerOn = smoothstep(0.2, 0.6, m.lowerTeeth) *
      smoothstep(0.03 * faceH, 0.06 * faceH, opened);
    // Drawn teeth in the photo's own teeth's tone when it shows them, else a warm
    // ivory a little brighter than the skin.
    const own = rig.photoTeeth;
    const teethY = own ? own.y : Math.min(225, 16 + (skin.y - 16) * 1.12 + 10);
    const tu = own ? own.u : 128 + (skin.u - 128) * 0.7;
    const tv = own ? own.v : 128 + (skin.v - 128) * 0.55;
    const lightK = rig.light * 0.15;
    // A narrow opening lets little light in: everything inside is dimmer.
    const dim = 0.6 + 0.4 * smoothstep(2, 0.07 * faceH, gap);
    fillLens(out, w, h, up, lo, (X, Y, px) => {
      unhead(pose, rig, X, Y, p);
      const hx = p[0], hy = p[1];
      const u = (hx - rig.mouthX) / mouthHw;
      const yu = polylineY(hUp.x, hUp.y, hx), yl = polylineY(hLo.x, hLo.y, hx);
      const gh = Math.max(0.5, yl - yu);
      const arch = Math.max(0, 1 - 0.5 * u * u);
      const lipShadow = 1 - 0.55 * Math.exp(-(hy - yu) / (0.018 * faceH + 0.5));
      const side = (1 - 0.55 * u * u) * (1 + lightK * u) * dim;
      const teethU = polylineY(rest.x, rest.y, hx) + showU * arch;
      const teethL = yl - showL * arch;
      let tongueTop = yl -
        gh * (0.2 + 0.3 * m.tongue) * Math.max(0, 1 - (u / 0.85) ** 2);
      if (m.tongueUp > 0) {
        const tip = Math.max(0, 1 - (u / 0.4) ** 2) * m.tongueUp;
        tongueTop += (Math.min(tongueTop, teethU + 0.5) - tongueTop) * tip;
      }
      // The cavity: faintly lit at the lips, dark at the back and the corners.
      const t = (hy - yu) / gh;
      const ef = Math.min(1, 2 * Math.min(t, 1 - t));
      const kc = (0.07 + 0.2 * (1 - ef) ** 2) * side * lipShadow;
      let cy = 16 + (lip.y - 16) * kc;
      let cu = 128 + (lip.u - 128) * 0.4, cv = 128 + (lip.v - 128) * 0.55 + 2;
      // Tongue: behind the lower teeth, its far side darker, its edge soft.
      const tongueA = smoothstep(tongueTop - 0.5, tongueTop + 1.5, hy) *
        Math.max(0, 1 - u * u);
      if (tongueA > 0) {
        const under = 1 - 0.45 * Math.exp(-(yl - hy) / (0.06 * gh + 0.8));
        // A shallow groove down its middle.
        const groove = 1 - 0.07 * Math.max(0, 1 - Math.abs(u) * mouthHw / 4);
        const k =
          (0.45 + 0.35 * smoothstep(tongueTop, tongueTop + 0.4 * gh, hy)) *
          side * lipShadow * under * groove;
        cy += (16 + (lip.y - 16) * k - cy) * tongueA;
        cu += (128 + (lip.u - 128) * 0.9 - cu) * tongueA;
        cv += (128 + (lip.v - 128) * 1.05 + 3 - cv) * tongueA;
      }
      // Teeth, lit less towards the corners where the cheeks shade them, with their
      // gaps and edges; the lower ones in the upper teeth's shadow.
      const au = Math.abs(u);
      const front = 1 - smoothstep(0.45, 0.9, au);
      const up = toothShade(u, mouthHw, 1), low = toothShade(u, mouthHw, 0.75);
      // Each tooth's biting edge a little higher at its sides: a scalloped row.
      const edgeU = teethU - 0.12 * showU * up.lift;
      const edgeL = teethL + 0.12 * showL * low.lift;
      const upperA = own ? 0 : front * smoothstep(edgeU + 0.6, edgeU - 0.6, hy);
      const lowerA = front * lowerOn * smoothstep(edgeL - 0.6, edgeL + 0.6, hy);
      let tk = 0, ta = 0;
      if (upperA > 0) {
        const edge = 1 - 0.15 * smoothstep(edgeU - 2.5, edgeU, hy);
        tk = side * lipShadow * edge * up.k;
        ta = upperA;
      } else if (lowerA > 0) {
        tk = 0.75 * side * low.k *
          (1 - 0.25 * smoothstep(edgeL, edgeL + 3, hy));
        ta = lowerA;
      }
      if (ta > 0) {
        cy += (16 + (teethY - 16) * tk - cy) * ta;
        // In shade the teeth take the mouth's red, lit they keep their own ivory.
        const shade = (1 - Math.min(1, tk)) * 0.7;
        cu += (tu + (cu - tu) * shade - cu) * ta;
        cv += (tv + (cv - tv) * shade - cv) * ta;
      }
      if (own) {
        // The photo's own teeth, where the photo shows them between its lips, fixed
        // to the skull; below them the drawn inside.
        const rl = polylineY(restLo.x, restLo.y, hx);
        let a = smoothstep(rl - 0.5, rl - 2, hy);
        if (a > 0) {
          a *= 1 - smoothstep(0.75, 1, Math.abs(u));
          cy += (bilinear(src.y, w, h, hx - 0.5, hy - 0.5) * lipShadow - cy) *
            a;
          cu +=
            (bilinear(src.u, w >> 1, h >> 1, hx / 2 - 0.5, hy / 2 - 0.5) - cu) *
            a;
          cv +=
            (bilinear(src.v, w >> 1, h >> 1, hx / 2 - 0.5, hy / 2 - 0.5) - cv) *
            a;
        }
      }
      px.y = cy, px.u = cu, px.v = cv;
    }, (x, g) => smoothstep(0.3, 2.5, g - restGap(x)));
    // The lips' inner edges turn into the shadow of the opening.
    const yuAt = (x: number) => polylineY(up.x, up.y, x);
    const ylAt = (x: number) => polylineY(lo.x, lo.y, x);
    const x0 = up.x[0], x1 = up.x[up.x.length - 1];
    // Only where the lips are apart there (not along a shut corner).
    const apart = (x: number) => smoothstep(0.3, 2, ylAt(x) - yuAt(x));
    darken(
      out,
      w,
      h,
      x0,
      x1,
      (x) => yuAt(x) - 2.5,
      2.5,
      (x, t) => 1 - 0.22 * openF * t * apart(x),
    );
    darken(
      out,
      w,
      h,
      x0,
      x1,
      ylAt,
      2.5,
      (x, t) => 1 - 0.18 * openF * (1 - t) * apart(x),
    );
  }
  // Under the lower lip and on the chin, the shade deepens as the jaw drops.
  const jaw = Math.min(1, m.open * 1.6);
  if (jaw > 0.02) {
    const ol = line(LIP_OUTER_LOWER, pose.x, pose.y);
    const cx = (ol.x[0] + ol.x[ol.x.length - 1]) / 2,
      hw = (ol.x[ol.x.length - 1] - ol.x[0]) / 2;
    darken(
      out,
      w,
      h,
      ol.x[0],
      ol.x[ol.x.length - 1],
      (x) => polylineY(ol.x, ol.y, x),
      0.07 * faceH,
      (x, t) => {
        const u = (x - cx) / hw;
        return 1 -
          0.16 * jaw * Math.sin(Math.PI * Math.sqrt(t)) *
            Math.max(0, 1 - u * u);
      },
    );
    // The chin below, turned down with the jaw, catches a little less light.
    darken(
      out,
      w,
      h,
      cx - 1.4 * hw,
      cx + 1.4 * hw,
      (x) => polylineY(ol.x, ol.y, x) + 0.05 * faceH,
      0.16 * faceH,
      (x, t) => {
        const u = (x - cx) / (1.4 * hw);
        return 1 - 0.06 * jaw * Math.sin(Math.PI * t) * Math.max(0, 1 - u * u);
      },
    );
  }
}

/** Draws both eyes between their moved lids, the irises turned by the gaze. */
export function drawEyes(
  rig: Rig,
  pose: Pose,
  state: FaceState,
  src: WarpSource,
  out: Uint8Array,
  scratch: InteriorScratch,
): void {
  for (const e of rig.eyes) drawEye(rig, e, pose, state, src, out, scratch);
}

/**
 * Where a look of `off` (px) takes the point at `d` along a line whose knots are the
 * eye's two edges `e0`, `e1` and the iris's `i0`, `i1`: the iris moves whole, the
 * white on either side stretches or gathers (no ghost of the iris, no flat fill). The
 * inverse map: the photo's coordinate shown at `d`.
 */
function unlook(
  d: number,
  e0: number,
  i0: number,
  i1: number,
  e1: number,
  off: number,
): number {
  // Knots in the frame: the edges stay, the iris shifts (kept inside the edges).
  const a = Math.max(e0 + 0.5, Math.min(e1 - 0.5, i0 + off));
  const b = Math.max(a, Math.min(e1 - 0.5, i1 + off));
  if (d <= e0 || d >= e1) return d;
  if (d < a) return e0 + (d - e0) * (i0 - e0) / Math.max(1e-6, a - e0);
  if (d <= b) return i0 + (d - a) * (i1 - i0) / Math.max(1e-6, b - a);
  return i1 + (d - b) * (e1 - i1) / Math.max(1e-6, e1 - b);
}

function drawEye(
  rig: Rig,
  e: EyeRig,
  pose: Pose,
  state: FaceState,
  src: WarpSource,
  out: Uint8Array,
  scratch: InteriorScratch,
): void {
  const up = line(e.upper, pose.x, pose.y), lo = line(e.lower, pose.x, pose.y);
  const rUp = line(e.upper, rig.sx, rig.sy),
    rLo = line(e.lower, rig.sx, rig.sy);
  const r = e.irisR;
  const ox = state.gaze.x * 0.5 * r, oy = state.gaze.y * 0.25 * r;
  const x0 = rUp.x[0], x1 = rUp.x[rUp.x.length - 1];
  const w = rig.width, h = rig.height, cw = w >> 1, ch = h >> 1;
  const p = scratch.p;
  fillLens(out, w, h, up, lo, (X, Y, px) => {
    unhead(pose, rig, X, Y, p);
    let hx = p[0], hy = p[1];
    const yu = polylineY(up.x, up.y, X);
    // A lowering lid shades the eye under it (the photo has its own shade at rest).
    const lid = 1 -
      0.3 * state.blink * Math.exp(-(Y - yu) / (0.15 * e.gap + 0.5));
    if (ox !== 0 || oy !== 0) {
      // The eyeball turns: the iris slides, the white gives, within the photo's own
      // opening (what the lids hid is not in the photo).
      hx = unlook(hx, x0, e.irisX - r, e.irisX + r, x1, ox);
      const ru = polylineY(rUp.x, rUp.y, hx), rl = polylineY(rLo.x, rLo.y, hx);
      hy = unlook(hy, ru, e.irisY - r, e.irisY + r, rl, oy);
      hy = Math.min(rl - 0.5, Math.max(ru + 0.5, hy));
    }
    px.y = 16 + (bilinear(src.y, w, h, hx - 0.5, hy - 0.5) - 16) * lid;
    px.u = bilinear(src.u, cw, ch, hx / 2 - 0.5, hy / 2 - 0.5);
    px.v = bilinear(src.v, cw, ch, hx / 2 - 0.5, hy / 2 - 0.5);
  });
}
