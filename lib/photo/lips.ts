/**
 * The portrait's lips read at upload (DECISIONS 12): the lips' and the teeth's tones,
 * which pixels show the mouth's inside (teeth or dark), the inner lip contours set on
 * the edges the photo shows (the mesh puts a smile's upper one inside the lip), and
 * how far apart the lips are with what shows between them. ./mouth.ts closes them.
 */
import { polylineY } from "../render/photo/geometry.ts";
import {
  CHIN,
  FOREHEAD,
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
  LIP_OUTER_LOWER,
  LIP_OUTER_UPPER,
} from "../render/photo/landmarks.ts";
import type { PhotoAvatar } from "../render/photo/types.ts";

/** A gap narrower than this (share of the face's height) is a closed mouth. */
export const CLOSED_SHARE = 0.012;

/** What the photo's mouth shows. */
export interface MouthReading {
  /** Gap between the inner lips at the middle, as a share of the face's height. */
  open: number;
  /** Of the pixels between the inner lips, the share that is teeth (bright, pale). */
  teeth: number;
  /** ...and the share that is dark (the inside of an open mouth). */
  dark: number;
}

export type Pixels = Pick<
  PhotoAvatar,
  "width" | "height" | "i420" | "landmarks"
>;

export const yOf = (lm: Float32Array, i: number) => lm[i * 3 + 1];
export const xOf = (lm: Float32Array, i: number) => lm[i * 3];

export function contour(lm: Float32Array, idx: readonly number[]) {
  return { x: idx.map((i) => xOf(lm, i)), y: idx.map((i) => yOf(lm, i)) };
}

export interface Tones {
  /**
   * The upper and the lower lip's tones and the teeth's (luma, U, V); luma below
   * `dark` is the mouth's inside.
   */
  upper: [number, number, number];
  lip: [number, number, number];
  teeth: [number, number, number];
  dark: number;
}

export function yuvAt(
  p: Pixels,
  x: number,
  y: number,
): [number, number, number] {
  const w = p.width, n = w * p.height;
  const X = Math.min(w - 1, Math.max(0, Math.round(x)));
  const Y = Math.min(p.height - 1, Math.max(0, Math.round(y)));
  const c = (Y >> 1) * (w >> 1) + (X >> 1);
  return [p.i420[Y * w + X], p.i420[n + c], p.i420[n * 5 / 4 + c]];
}

/**
 * The photo's lip tone (the lower lip's middle) and teeth tone (the brighter third of
 * the gap's middle row), from the mesh's contours.
 */
export function tonesOf(p: Pixels, lm: Float32Array): Tones {
  const iu = contour(lm, LIP_INNER_UPPER), il = contour(lm, LIP_INNER_LOWER);
  const ol = contour(lm, LIP_OUTER_LOWER), ou = contour(lm, LIP_OUTER_UPPER);
  const x0 = iu.x[0], x1 = iu.x[iu.x.length - 1], q = (x1 - x0) / 4;
  const lip = [0, 0, 0], upper = [0, 0, 0];
  const gap: Array<[number, number, number]> = [];
  let n = 0;
  for (let x = Math.ceil(x0 + q); x < x1 - q; x++) {
    const yl = polylineY(il.x, il.y, x), yo = polylineY(ol.x, ol.y, x);
    const c = yuvAt(p, x, (yl + yo) / 2);
    // The mesh's upper inner contour lies in the lip or on its edge: a little above.
    const yu = polylineY(iu.x, iu.y, x);
    const cu = yuvAt(p, x, yu - 0.3 * (yu - polylineY(ou.x, ou.y, x)));
    for (let k = 0; k < 3; k++) lip[k] += c[k], upper[k] += cu[k];
    n++;
    gap.push(yuvAt(p, x, (polylineY(iu.x, iu.y, x) + yl) / 2));
  }
  for (let k = 0; k < 3; k++) {
    lip[k] /= Math.max(1, n), upper[k] /= Math.max(1, n);
  }
  gap.sort((a, b) => b[0] - a[0]);
  const top = gap.slice(0, Math.max(1, Math.ceil(gap.length / 3)));
  const teeth = [0, 1, 2].map((k) =>
    top.reduce((s, c) => s + c[k], 0) / top.length
  ) as [number, number, number];
  return {
    upper: upper as [number, number, number],
    lip: lip as [number, number, number],
    teeth,
    // Darker than either lip (a dark-skinned upper lip is not the mouth's inside).
    dark: 0.55 * Math.min(lip[0], upper[0]),
  };
}

/** Distance of a colour from a tone: chroma counts double luma. */
function dist(c: [number, number, number], t: [number, number, number]) {
  return ((c[0] - t[0]) / 2) ** 2 + (c[1] - t[1]) ** 2 + (c[2] - t[2]) ** 2;
}

/**
 * Whether (x, y) shows the mouth's inside: dark, or nearer the teeth's tone than the
 * lip's (`upper` lip or lower).
 */
export function inside(
  p: Pixels,
  x: number,
  y: number,
  t: Tones,
  upper = false,
): boolean {
  const c = yuvAt(p, x, y);
  if (c[0] < t.dark) return true;
  const lip = upper ? t.upper : t.lip;
  // Brighter than halfway from the lip to the teeth: teeth, whatever their tint
  // (a dark lip's edge is told by light alone).
  if (t.teeth[0] > lip[0] + 30 && c[0] > (lip[0] + t.teeth[0]) / 2) return true;
  // Without the lip's colour: a tooth in shade (a pale lip is as light as one).
  if (lipColour(c, lip) < 0.45 && lipColour(t.teeth, lip) < 0.45) return true;
  return dist(c, t.teeth) < dist(c, lip);
}

/**
 * How much of the lip's own colour a pixel has: its chroma projected on the lip's
 * (1 a lip, near 0 a grey or white: a shaded tooth, the dark corner of a smile). A lip
 * with little colour of its own tells nothing by chroma: 1.
 */
export function lipColour(
  c: readonly [number, number, number],
  lip: readonly [number, number, number],
): number {
  const lu = lip[1] - 128, lv = lip[2] - 128;
  const m = lu * lu + lv * lv;
  if (m < MIN_LIP_CHROMA ** 2) return 1;
  return ((c[1] - 128) * lu + (c[2] - 128) * lv) / m;
}

/** Chroma a lip needs (distance from grey, 8-bit U/V) for `lipColour` to judge by. */
const MIN_LIP_CHROMA = 8;

/**
 * Sets the inner lip contours of `lm` (in place) on the edges the photo shows: each
 * point moves along its column to where the lip ends and the teeth or the dark mouth
 * begin (the mesh puts a smile's upper one inside the lip). Only where the lips are
 * apart; the corners stay.
 */
export function refineInnerLips(p: Pixels, lm: Float32Array): void {
  const faceH = yOf(lm, CHIN) - yOf(lm, FOREHEAD);
  const mid = LIP_INNER_UPPER.length >> 1;
  const gap0 = yOf(lm, LIP_INNER_LOWER[mid]) - yOf(lm, LIP_INNER_UPPER[mid]);
  if (gap0 < CLOSED_SHARE * faceH) return;
  const t = tonesOf(p, lm);
  const upY: number[] = [], loY: number[] = [];
  for (let k = 1; k < LIP_INNER_UPPER.length - 1; k++) {
    const u = LIP_INNER_UPPER[k], l = LIP_INNER_LOWER[k];
    const xu = xOf(lm, u), xl = xOf(lm, l);
    const yu = Math.round(yOf(lm, u)), yl = Math.round(yOf(lm, l));
    let a = yu, b = yl;
    if (inside(p, xu, a, t, true)) {
      while (a > yu - 0.02 * faceH && inside(p, xu, a - 1, t, true)) a--;
    } else {
      while (
        a < Math.min(yl - 1, yu + 0.05 * faceH) && !inside(p, xu, a, t, true)
      ) a++;
      // Up through the teeth's shaded top (darker towards the lip), to the lip.
      for (
        let k = 0;
        k < 3 && yuvAt(p, xu, a - 1)[0] < yuvAt(p, xu, a)[0] - 3;
        k++
      ) {
        a--;
      }
    }
    if (inside(p, xl, b, t)) {
      while (b < yl + 0.02 * faceH && inside(p, xl, b + 1, t)) b++;
    } else {
      while (b > Math.max(a + 1, yl - 0.05 * faceH) && !inside(p, xl, b, t)) {
        b--;
      }
    }
    // Past the boundary pixel, on the lip's side: the teeth nearest the lip are in its
    // shade and read as lip; left inside the lip, the closed lips would show them.
    upY.push(a - 2.5);
    loY.push(b + 2);
  }
  const med = (a: number[], k: number) => {
    const v = [a[Math.max(0, k - 1)], a[k], a[Math.min(a.length - 1, k + 1)]];
    return v.sort((s, t) => s - t)[1];
  };
  for (let k = 1; k < LIP_INNER_UPPER.length - 1; k++) {
    const u = LIP_INNER_UPPER[k], l = LIP_INNER_LOWER[k];
    const nu = med(upY, k - 1), nl = med(loY, k - 1);
    lm[u * 3 + 1] = nu;
    lm[l * 3 + 1] = Math.max(nl, nu + 1);
  }
}

/** How far apart the lips of `lm` are and what shows between them. */
export function readMouth(p: Pixels, lm: Float32Array): MouthReading {
  const faceH = yOf(lm, CHIN) - yOf(lm, FOREHEAD);
  const iu = contour(lm, LIP_INNER_UPPER), il = contour(lm, LIP_INNER_LOWER);
  const mid = iu.x.length >> 1;
  const open = Math.max(0, il.y[mid] - iu.y[mid]) / faceH;
  const t = tonesOf(p, lm);
  const x0 = iu.x[0], x1 = iu.x[iu.x.length - 1];
  let n = 0, teeth = 0, dark = 0;
  for (
    let x = Math.ceil(x0 + 0.15 * (x1 - x0));
    x < x1 - 0.15 * (x1 - x0);
    x++
  ) {
    const yu = polylineY(iu.x, iu.y, x), yl = polylineY(il.x, il.y, x);
    for (let y = Math.ceil(yu + 0.5); y < yl - 0.5; y++) {
      n++;
      if (!inside(p, x, y, t)) continue;
      if (yuvAt(p, x, y)[0] < t.dark) dark++;
      else teeth++;
    }
  }
  return { open, teeth: n ? teeth / n : 0, dark: n ? dark / n : 0 };
}
