/**
 * Mouth shapes: one per viseme (lib/render/visemes.ts), blended by the smoothed viseme
 * weights (coarticulation), and drawn into the frame with lips, the mouth's inside,
 * teeth and tongue. The jaw drops with the opening and the cheeks follow the width.
 */
import {
  ellipse,
  type Frame,
  mix,
  type Rgb,
  toYuv,
  type Yuv,
} from "./raster.ts";
import { VISEME_COUNT, visemeIndex } from "./visemes.ts";

/** How a mouth is held; every field 0..1. */
export interface MouthShape {
  /** Jaw and lips apart. */
  open: number;
  /** Lip corners spread (smile-wide: "ee", "s"). */
  wide: number;
  /** Lips rounded and pushed forward ("oo", "w"). */
  round: number;
  /** Upper teeth showing. */
  teeth: number;
  /** Lower teeth showing (teeth close together: "s", "ch"). */
  lowerTeeth: number;
  /** Tongue showing: at the bottom ("ah"), or between the teeth for TH (tongueUp). */
  tongue: number;
  /** Tongue tip raised to the upper teeth (TH, DD, nn, l). */
  tongueUp: number;
  /** Lower lip tucked under the upper teeth (f, v). */
  tuck: number;
  /** Lips pressed together (p, b, m). */
  press: number;
}

const S = (
  open: number,
  wide: number,
  round: number,
  teeth: number,
  lowerTeeth: number,
  tongue: number,
  tongueUp: number,
  tuck: number,
  press: number,
): MouthShape => ({
  open,
  wide,
  round,
  teeth,
  lowerTeeth,
  tongue,
  tongueUp,
  tuck,
  press,
});

/** The shape of each viseme, in `VISEMES` order. */
export const VISEME_SHAPES: readonly MouthShape[] = [
  S(0, 0.35, 0, 0, 0, 0, 0, 0, 0), // sil
  S(0, 0.3, 0.1, 0, 0, 0, 0, 0, 1), // PP
  S(0.12, 0.45, 0, 1, 0, 0, 0, 1, 0), // FF
  S(0.3, 0.5, 0, 0.9, 0.4, 0.9, 1, 0, 0), // TH
  S(0.3, 0.5, 0, 0.8, 0.5, 0.4, 0.7, 0, 0), // DD
  S(0.42, 0.45, 0, 0.6, 0.3, 0.5, 0, 0, 0), // kk
  S(0.3, 0.2, 0.65, 1, 1, 0, 0, 0, 0), // CH
  S(0.24, 0.85, 0, 1, 1, 0, 0, 0, 0), // SS
  S(0.26, 0.5, 0, 0.7, 0.3, 0.3, 0.8, 0, 0), // nn
  S(0.3, 0.2, 0.55, 0.5, 0.2, 0.3, 0, 0, 0), // RR
  S(1, 0.45, 0, 0.7, 0.2, 0.8, 0, 0, 0), // aa
  S(0.6, 0.75, 0, 0.8, 0.4, 0.5, 0, 0, 0), // E
  S(0.4, 1, 0, 1, 0.7, 0.2, 0, 0, 0), // I
  S(0.75, 0.05, 0.8, 0.2, 0, 0.3, 0, 0, 0), // O
  S(0.35, 0, 1, 0, 0, 0, 0, 0, 0), // U
];

const KEYS = Object.keys(VISEME_SHAPES[0]) as Array<keyof MouthShape>;
const PP = visemeIndex("PP");

/**
 * The shape held under viseme `weights` (summing to 1), into `out`. When `PP` is the
 * heaviest weight the lips meet, whatever the others: p, b and m are made by closing
 * the lips, which a blend does not do (PP at 0.3 beside vowels would leave the mouth a
 * third open, and a viewer sees no p at all), so the opening is taken away and the lips
 * press. Width and rounding stay blended (an m before "oo" is rounded).
 */
export function blendShape(
  weights: ArrayLike<number>,
  out: MouthShape = { ...VISEME_SHAPES[0] },
): MouthShape {
  for (const k of KEYS) out[k] = 0;
  let heaviest = 0;
  for (let v = 0; v < VISEME_COUNT; v++) {
    const w = weights[v];
    if (w > weights[heaviest]) heaviest = v;
    if (w < 1e-3) continue;
    const s = VISEME_SHAPES[v];
    for (const k of KEYS) out[k] += w * s[k];
  }
  if (heaviest === PP) {
    out.open = 0;
    out.press = 1;
  }
  return out;
}

/** The viseme whose shape is nearest `m` (open, width, rounding): what a mouth shows. */
export function nearestViseme(
  m: Pick<MouthShape, "open" | "wide" | "round">,
): number {
  let best = 0;
  let bestD = Infinity;
  for (let v = 0; v < VISEME_COUNT; v++) {
    const s = VISEME_SHAPES[v];
    const d = (s.open - m.open) ** 2 + (s.wide - m.wide) ** 2 +
      (s.round - m.round) ** 2;
    if (d < bestD) (bestD = d, best = v);
  }
  return best;
}

/** Where and how big the face is in this frame (from ./draw.ts). */
export interface FaceGeometry {
  cx: number;
  headCy: number;
  headRx: number;
  headRy: number;
  tilt: number;
  skin: Rgb;
}

const CAVITY = toYuv([58, 18, 26]);
const TEETH = toYuv([238, 234, 226]);
const TONGUE = toYuv([196, 92, 100]);

/**
 * The jaw: the chin drops with the opening (below the head's outline), in `colour`
 * (the skin; white in an alpha plane).
 */
export function drawJaw(
  f: Frame,
  g: FaceGeometry,
  m: MouthShape,
  colour: Yuv = toYuv(g.skin),
): void {
  const { headRx: rx, headRy: ry } = g;
  const jaw = Math.min(1, Math.max(0, m.open)) * ry * 0.07;
  if (jaw <= 0.3) return;
  ellipse(
    f,
    g.cx + g.tilt * (ry - ry * 0.7),
    g.headCy + ry * 0.7 + jaw,
    rx * 0.6,
    ry * 0.3,
    colour,
  );
}

/** Draws the jaw, cheeks and mouth for `m` (opening already scaled by loudness). */
export function drawMouth(f: Frame, g: FaceGeometry, m: MouthShape): void {
  const { headRx: rx, headRy: ry } = g;
  const open = Math.min(1, Math.max(0, m.open));
  const jaw = open * ry * 0.07;
  const pivotY = g.headCy + ry;
  const lean = (y: number) => g.cx + g.tilt * (pivotY - y);
  drawJaw(f, g, m);
  // Cheeks: a soft flush that rises and spreads with a wide mouth, narrows when rounded.
  const cheek = toYuv(mix(g.skin, [214, 96, 96], 0.5));
  const cheekY = g.headCy + ry * (0.3 - 0.05 * m.wide + 0.02 * open);
  for (const side of [-1, 1]) {
    ellipse(
      f,
      lean(cheekY) + side * rx * (0.56 + 0.05 * m.wide - 0.06 * m.round),
      cheekY,
      rx * (0.16 - 0.03 * m.round),
      ry * 0.09,
      cheek,
      { alpha: 0.28 },
    );
  }

  const cy = g.headCy + ry * 0.52 + jaw * 0.55;
  const cx = lean(cy);
  const mw = rx * (0.27 + 0.15 * m.wide - 0.12 * m.round - 0.04 * m.press);
  const lip = ry * (0.03 + 0.02 * m.round + 0.02 * m.press - 0.01 * m.tuck);
  const mh = ry * 0.2 * open * (1 - 0.3 * m.wide * (1 - m.round));
  const lips = toYuv(mix(g.skin, [170, 60, 70], 0.55));
  const lipsDark = toYuv(mix(g.skin, [120, 40, 50], 0.6));
  // Outer lips.
  ellipse(f, cx, cy, mw * 1.08, mh + lip, lips);
  if (m.press > 0.5 || mh < ry * 0.012) {
    // Closed: the line where the lips meet; pressed lips bulge a little.
    ellipse(
      f,
      cx,
      cy,
      mw * (0.92 - 0.1 * m.press),
      Math.max(0.8, ry * 0.01),
      lipsDark,
    );
    if (m.tuck > 0.5) {
      // f/v: the upper teeth rest on the lower lip.
      ellipse(f, cx, cy - ry * 0.01, mw * 0.66, ry * 0.045, TEETH, {
        clipTop: cy - ry * 0.035,
        clipBottom: cy + ry * 0.018,
      });
    }
    return;
  }
  // The inside of the mouth.
  const iw = mw * (0.9 - 0.15 * m.round);
  ellipse(f, cx, cy, iw, mh, CAVITY);
  const top = cy - mh;
  const bottom = cy + mh;
  if (m.tongue > 0.1) {
    const ty = m.tongueUp > 0.5 ? cy - mh * 0.25 : cy + mh * 0.55;
    ellipse(f, cx, ty, iw * 0.62, mh * (0.3 + 0.25 * m.tongue), TONGUE, {
      clipTop: top + 1,
      clipBottom: bottom - 0.5,
    });
  }
  if (m.teeth > 0.1) {
    ellipse(
      f,
      cx,
      top + mh * 0.05,
      iw * 0.78,
      Math.max(1, mh * 0.32 * m.teeth + ry * 0.01),
      TEETH,
      {
        clipTop: top,
        clipBottom: cy,
      },
    );
  }
  if (m.lowerTeeth > 0.1) {
    ellipse(
      f,
      cx,
      bottom - mh * 0.05,
      iw * 0.72,
      Math.max(1, mh * 0.28 * m.lowerTeeth),
      TEETH,
      {
        clipTop: cy,
        clipBottom: bottom,
      },
    );
  }
}
