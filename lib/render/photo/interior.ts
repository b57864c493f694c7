/**
 * What the warp cannot take from the photo: the inside of the open mouth (the upper
 * teeth fixed to the skull, the lower teeth and the tongue riding on the jaw, a cavity
 * darker towards the back, the upper lip's shadow, all in the tones of the photo's own
 * lips and skin), and the shade under the lower lip that deepens as the jaw drops.
 * The eyes are ./eyes.ts.
 */
import { polylineY, smoothstep } from "./geometry.ts";
import {
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
  LIP_OUTER_LOWER,
} from "./landmarks.ts";
import { unhead } from "./pose.ts";
import { type DrawInterior, fillLens, line, smoothLine } from "./lens.ts";
import { bilinear } from "./warp.ts";

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

/**
 * How much of the photo's upper row rounded lips hide (at full rounding, with no teeth
 * asked for): the lip comes down over it, so its lower part shows under the lip.
 */
const ROUND_COVER = 0.9;

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

/** Draws the mouth's inside and the shade under the lower lip into `out`. */
export const drawMouth: DrawInterior = (
  rig,
  pose,
  state,
  _src,
  out,
  scratch,
) => {
  const w = rig.width, h = rig.height;
  const rawUp = line(LIP_INNER_UPPER, pose.x, pose.y);
  const rawLo = line(LIP_INNER_LOWER, pose.x, pose.y);
  const mid = LIP_INNER_UPPER.length >> 1;
  const gap = rawLo.y[mid] - rawUp.y[mid];
  const up = smoothLine(rawUp), lo = smoothLine(rawLo);
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
    // Drawn teeth in the photo's own teeth's tone when it shows them, else an ivory
    // a little brighter than the skin with about half its colour (where the
    // evaluation set's portraits show teeth, they carry 0.3-0.4 of the skin's
    // chroma: at the skin's 0.7/0.55 drawn teeth were khaki, grey-green beside a
    // ruddy face; at 0.4/0.3, grey-blue).
    const own = rig.photoTeeth;
    const teethY = own ? own.y : Math.min(225, 16 + (skin.y - 16) * 1.12 + 10);
    const tu = own ? own.u : 128 + (skin.u - 128) * 0.5;
    const tv = own ? own.v : 128 + (skin.v - 128) * 0.45;
    const lightK = rig.light * 0.15;
    // A narrow opening lets little light in: everything inside is dimmer.
    const dim = 0.6 + 0.4 * smoothstep(2, 0.07 * faceH, gap);
    let cy = 0, cu = 0, cv = 0;
    // Blends teeth of shade `tk` by `a` over the colour so far: in shade they take
    // the mouth's red, lit they keep their own ivory.
    // (The mouth's red is the lip's own, half strength: the cavity's chroma falls with
    // its light, and shaded teeth taking that would turn grey-green beside the skin.)
    const redU = 128 + (lip.u - 128) * 0.5, redV = 128 + (lip.v - 128) * 0.5;
    // (Their chroma falls with their light, as the cavity's does: teeth in shade
    // keep their colour's hue, not its strength, or they read as olive.)
    const teeth = (tk: number, a: number) => {
      cy += (16 + (teethY - 16) * tk - cy) * a;
      const shade = (1 - Math.min(1, tk)) * 0.7;
      const ck = Math.min(1, 0.35 + tk);
      cu += (128 + (tu - 128 + (redU - tu) * shade) * ck - cu) * a;
      cv += (128 + (tv - 128 + (redV - tv) * shade) * ck - cv) * a;
    };
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
      // The cavity: the lips' wet inner side at its rim; at the corners, where the
      // lips meet, that side fills the narrowing gap (the corner closes softly, not
      // cut); inside, darkest under the upper teeth, a little light coming back off
      // the tongue and the lower lip towards the bottom.
      const t = (hy - yu) / gh;
      const ef = Math.min(1, 2 * Math.min(t, 1 - t));
      const ax = Math.abs(hx - (hUp.x[0] + hUp.x[hUp.x.length - 1]) / 2) /
        Math.max(1, (hUp.x[hUp.x.length - 1] - hUp.x[0]) / 2);
      // (Towards the ends or where the gap narrows: a rounded mouth's corners are
      // shut well inside the inner lips' ends.)
      const corner = Math.max(
        smoothstep(0.62, 1, ax),
        smoothstep(0.35, 0.08, gh / Math.max(1, gap)),
      ) ** 1.5;
      const kc = (0.04 + 0.2 * t * t + 0.3 * (1 - ef) ** 2) * side * lipShadow +
        0.5 * corner;
      cy = 16 + (lip.y - 16) * kc;
      // A surface in shade keeps its hue, not its chroma: chroma falls with the
      // light as luma does (a little redder than the lip: the wet inside), or the
      // dark mouth reads as saturated maroon; a quarter of it stays, or the
      // mouth's corners beside the teeth read as grey.
      const ck = Math.min(1, 0.25 + 1.5 * kc);
      cu = 128 + (lip.u - 128) * (0.4 + 0.4 * corner) * ck;
      cv = 128 + ((lip.v - 128) * (0.55 + 0.3 * corner) + 2) * ck;
      // Tongue: behind the lower teeth, its far side darker, its edge soft.
      const tongueA = smoothstep(
        tongueTop - Math.max(2, 0.08 * gh),
        tongueTop + Math.max(3, 0.12 * gh),
        hy,
      ) *
        Math.max(0, 1 - u * u);
      if (tongueA > 0) {
        const under = 1 - 0.45 * Math.exp(-(yl - hy) / (0.06 * gh + 0.8));
        // A shallow groove down its middle.
        const groove = 1 - 0.07 * Math.max(0, 1 - Math.abs(u) * mouthHw / 4);
        const k =
          (0.45 + 0.35 * smoothstep(tongueTop, tongueTop + 0.4 * gh, hy)) *
          side * lipShadow * under * groove;
        // (Its chroma, too, falls with its light: a tongue in shade is no redder.)
        const tk = Math.min(1, 0.1 + 1.5 * k);
        cy += (16 + (lip.y - 16) * k - cy) * tongueA;
        cu += (128 + (lip.u - 128) * 0.9 * tk - cu) * tongueA;
        cv += (128 + ((lip.v - 128) * 1.05 + 3) * tk - cv) * tongueA;
      }
      // Teeth, lit less towards the corners where the cheeks shade them, with their
      // gaps and edges; the lower ones in the upper teeth's shadow.
      const au = Math.abs(u);
      const front = 1 - smoothstep(0.45, 0.9, au);
      const up = toothShade(u, mouthHw, 1), low = toothShade(u, mouthHw, 0.75);
      // Each tooth's biting edge a little higher at its sides: a scalloped row.
      const edgeU = teethU - 0.12 * showU * up.lift;
      const edgeL = teethL + 0.12 * showL * low.lift;
      // Rounded lips stand forward of the teeth and gather at the corners: the
      // middle teeth show, not a smile's full row.
      const rounded = 1 - m.round * smoothstep(0.15, 0.5, au);
      let upperA = 0, ownK = 0, ownC = -1, biteU = edgeU, cover = 0;
      if (own) {
        // The photo's teeth where it shows them; where its lips hid part of the row
        // (a column of the mouth without them), drawn ones in their tone and the
        // row's height, taking over from the photo's over a few columns, not a gap
        // and not a hard edge.
        const c = Math.round(hx) - own.x0;
        if (c >= 0 && c < own.edge.length) {
          ownK = own.presence[c], ownC = own.nearest[c];
          const tall = ownC >= 0 ? own.edge[ownC] - own.top[ownC] : own.height;
          biteU = own.top[c] + own.height + (tall - own.height) * ownK;
          // Rounded lips come down over the row as they push forward: only
          // its lower part shows under the upper lip, its biting edge higher.
          cover = ROUND_COVER * m.round * (1 - m.teeth) * (biteU - own.top[c]);
          biteU -= cover;
          upperA = (1 - smoothstep(0.75, 1, au)) * rounded *
            (ownK + (1 - ownK) * front) *
            smoothstep(biteU + 0.6, biteU - 0.6, hy);
        }
      } else {
        // (Drawn, they hang from the upper lip, their edge higher as it comes
        // down over them.)
        biteU = edgeU -
          ROUND_COVER * m.round * (1 - m.teeth) * Math.max(0, edgeU - yu);
        upperA = front * rounded * smoothstep(biteU + 0.6, biteU - 0.6, hy);
      }
      // The lower teeth first (behind the upper ones where the rows meet, no dark
      // rule between them): lit along their biting edge, shaded under the lip.
      const lowerA = front * lowerOn * smoothstep(edgeL - 1, edgeL + 1.2, hy);
      if (lowerA > 0) {
        const tk = side * (0.92 - 0.05 * (1 - low.k) / 0.15) *
          (0.85 - 0.3 * smoothstep(edgeL, edgeL + 0.8 * showL, hy));
        teeth(tk, lowerA);
      }
      if (upperA > 0 && ownK < 1) {
        const edge = 1 - 0.15 * smoothstep(biteU - 2.5, biteU, hy);
        teeth(lipShadow * (0.3 + 0.7 * side * edge * up.k), upperA);
      }
      if (upperA > 0 && own && ownK > 0 && ownC >= 0) {
        // The photo's own teeth (past the row's end, its last column's), in the
        // lip's shade and the opening's light.
        const c = Math.round(hx) - own.x0;
        const L = own.layer, sx = own.x0 + ownC + (hx - Math.round(hx));
        const lx = sx - L.x - 0.5,
          ly = hy + cover - own.top[c] + own.top[ownC] - L.y - 0.5;
        const cx = (lx + 0.5) / 2 - 0.5, cyy = (ly + 0.5) / 2 - 0.5;
        const k = (0.5 + 0.5 * lipShadow) * (0.88 + 0.12 * dim);
        const a = upperA * ownK;
        const ty = bilinear(L.i420, L.w, L.h, lx, ly);
        cy += (16 + (ty - 16) * k - cy) * a;
        cu += (bilinear(own.u420, L.w >> 1, L.h >> 1, cx, cyy) - cu) * a;
        cv += (bilinear(own.v420, L.w >> 1, L.h >> 1, cx, cyy) - cv) * a;
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
};
