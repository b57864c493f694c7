/**
 * What `deno task photo:eval` measures on a frame, from its pixels and the face mesh
 * found on them (MediaPipe's 468 points and the iris, as lib/photo/models.ts returns
 * them): teeth-like pixels inside the outer lip contour, iris-dark pixels inside an
 * eye, how far apart the lips and the lids are, and the plain statistics of the table.
 */
import {
  EYE_A_LOWER,
  EYE_A_UPPER,
  EYE_B_LOWER,
  EYE_B_UPPER,
  LIP_OUTER_LOWER,
  LIP_OUTER_UPPER,
} from "../../lib/render/photo/landmarks.ts";

/** An RGB picture, 3 bytes a pixel. */
export interface RgbFrame {
  width: number;
  height: number;
  data: Uint8Array;
}

/** A closed contour: `lower` corner to corner, then `upper` back between them. */
function around(lower: readonly number[], upper: readonly number[]): number[] {
  return [...lower, ...upper.slice(1, -1).reverse()];
}

/** The outer lip contour, in order around the mouth (MediaPipe's mesh indices). */
export const LIPS_OUTER = around(LIP_OUTER_LOWER, LIP_OUTER_UPPER);
/** The right eye's (the viewer's left) lid margin, in order. */
export const RIGHT_EYE = around(EYE_A_LOWER, EYE_A_UPPER);
/** The left eye's lid margin, in order. */
export const LEFT_EYE = around(EYE_B_LOWER, EYE_B_UPPER);

/** Point `i` of a mesh (x, y, z per point). */
export function pt(mesh: ArrayLike<number>, i: number): [number, number] {
  return [mesh[i * 3], mesh[i * 3 + 1]];
}

/** The polygon of mesh points `idx`, optionally shrunk towards its centroid by `k`. */
export function polygon(
  mesh: ArrayLike<number>,
  idx: number[],
  k = 0,
): Array<[number, number]> {
  const pts = idx.map((i) => pt(mesh, i));
  const cx = pts.reduce((s, p) => s + p[0], 0) / pts.length;
  const cy = pts.reduce((s, p) => s + p[1], 0) / pts.length;
  return pts.map((
    [x, y],
  ) => [cx + (x - cx) * (1 - k), cy + (y - cy) * (1 - k)]);
}

/** Pixel indices whose centres lie inside `poly` (even-odd rule), clipped to the frame. */
export function insidePolygon(
  poly: Array<[number, number]>,
  width: number,
  height: number,
): number[] {
  const out: number[] = [];
  const ys = poly.map((p) => p[1]);
  const y0 = Math.max(0, Math.floor(Math.min(...ys)));
  const y1 = Math.min(height - 1, Math.ceil(Math.max(...ys)));
  for (let y = y0; y <= y1; y++) {
    const cy = y + 0.5;
    const xs: number[] = [];
    for (let i = 0; i < poly.length; i++) {
      const [ax, ay] = poly[i], [bx, by] = poly[(i + 1) % poly.length];
      if ((ay <= cy) !== (by <= cy)) {
        xs.push(ax + (cy - ay) / (by - ay) * (bx - ax));
      }
    }
    xs.sort((a, b) => a - b);
    for (let j = 0; j + 1 < xs.length; j += 2) {
      const from = Math.max(0, Math.ceil(xs[j] - 0.5));
      const to = Math.min(width - 1, Math.floor(xs[j + 1] - 0.5));
      for (let x = from; x <= to; x++) out.push(y * width + x);
    }
  }
  return out;
}

/** BT.601 luma (0..255, full range) of pixel `i`. */
export function lumaAt(f: RgbFrame, i: number): number {
  const d = f.data;
  return 0.299 * d[3 * i] + 0.587 * d[3 * i + 1] + 0.114 * d[3 * i + 2];
}

/** The skin's tone on a frame: its luma and its redness ((R − G) / max), medians. */
export interface SkinTone {
  luma: number;
  redness: number;
}

/** (R − G) / max(R, G, B): high on lips, lower on skin, near 0 on teeth and grey. */
function redness(r: number, g: number, b: number): number {
  const max = Math.max(r, g, b);
  return max > 0 ? (r - g) / max : 0;
}

/**
 * The skin's tone: medians over two cheek patches (around points 205 and 425, a
 * tenth of the face's width across), where neither lips, eyes nor beard usually are.
 */
export function skinTone(f: RgbFrame, mesh: ArrayLike<number>): SkinTone {
  const faceW = Math.hypot(
    pt(mesh, 454)[0] - pt(mesh, 234)[0],
    pt(mesh, 454)[1] - pt(mesh, 234)[1],
  );
  const r = Math.max(2, Math.round(faceW * 0.05));
  const lumas: number[] = [], reds: number[] = [];
  const d = f.data;
  for (const i of [205, 425]) {
    const [cx, cy] = pt(mesh, i);
    for (let y = Math.round(cy) - r; y <= Math.round(cy) + r; y++) {
      for (let x = Math.round(cx) - r; x <= Math.round(cx) + r; x++) {
        if (x < 0 || y < 0 || x >= f.width || y >= f.height) continue;
        const k = y * f.width + x;
        lumas.push(lumaAt(f, k));
        reds.push(redness(d[3 * k], d[3 * k + 1], d[3 * k + 2]));
      }
    }
  }
  return { luma: quantile(lumas, 0.5), redness: quantile(reds, 0.5) };
}

/** Below this skin redness a picture is taken for black and white (sepia included). */
const GREY_REDNESS = 0.04;
/**
 * Without colour, teeth are told from lips by light alone: at least this much brighter
 * than the cheeks (an old print's lips are often as light as the skin around them).
 */
const GREY_TEETH_LUMA = 1.15;

/**
 * Whether a pixel looks like a tooth: bright (luma at least 0.9 of the skin's and at
 * least 100: lips are darker than the skin around them), of low saturation (HSV
 * saturation ≤ 0.35: lips are red, teeth white to ivory) and, in a colour picture,
 * less than half as red as the skin — pale lips (an older face, pink lips on dark
 * skin) are as bright and as unsaturated as teeth, but redder than the skin; in a
 * black-and-white one, clearly brighter than the skin (`GREY_TEETH_LUMA`).
 */
export function teethLike(
  r: number,
  g: number,
  b: number,
  skin: SkinTone,
): boolean {
  const max = Math.max(r, g, b), min = Math.min(r, g, b);
  const y = 0.299 * r + 0.587 * g + 0.114 * b;
  if (y < Math.max(100, 0.9 * skin.luma) || max === 0) return false;
  if ((max - min) / max > 0.35) return false;
  if (skin.redness < GREY_REDNESS) return y >= GREY_TEETH_LUMA * skin.luma;
  return redness(r, g, b) <= 0.5 * skin.redness;
}

/** Share (%) of the pixels inside the outer lip contour that look like teeth. */
export function teethPercent(f: RgbFrame, mesh: ArrayLike<number>): number {
  const px = insidePolygon(polygon(mesh, LIPS_OUTER), f.width, f.height);
  if (px.length === 0) return 0;
  const skin = skinTone(f, mesh);
  let n = 0;
  for (const i of px) {
    const d = f.data;
    if (teethLike(d[3 * i], d[3 * i + 1], d[3 * i + 2], skin)) n++;
  }
  return 100 * n / px.length;
}

/**
 * The open eye's tones on the rest frame: its iris and the lid above it (luma), and
 * their colours (median U, V).
 */
export interface EyeTones {
  iris: number;
  lid: number;
  irisUv: [number, number];
  lidUv: [number, number];
}

/** Pixel `i`'s chroma (BT.601 U, V). */
function uvAt(f: RgbFrame, i: number): [number, number] {
  const r = f.data[3 * i], g = f.data[3 * i + 1], b = f.data[3 * i + 2];
  return [
    128 - 0.169 * r - 0.331 * g + 0.5 * b,
    128 + 0.5 * r - 0.419 * g - 0.081 * b,
  ];
}

/** Median chroma of pixels `px`. */
function medianUv(f: RgbFrame, px: number[]): [number, number] {
  const uv = px.map((i) => uvAt(f, i));
  return [
    quantile(uv.map((c) => c[0]), 0.5),
    quantile(uv.map((c) => c[1]), 0.5),
  ];
}

/** Mesh points of an iris: its centre, then four on its rim (MediaPipe's 468–477). */
const IRIS_A = 468, IRIS_B = 473;

/**
 * `eye`'s tones on a frame where it is open: the iris's (the median luma of the
 * mesh's iris disc inside the lid margin) and the lid's (the p75 luma of a band from
 * 0.3 to 1 of the eye's height above its upper margin, over the middle 60 % of its
 * width: where a closing lid's skin comes from; the p75, its skin rather than lashes).
 */
export function eyeTones(
  f: RgbFrame,
  mesh: ArrayLike<number>,
  eye: number[],
): EyeTones {
  const poly = polygon(mesh, eye);
  const cx = poly.reduce((s, p) => s + p[0], 0) / poly.length;
  const cy = poly.reduce((s, p) => s + p[1], 0) / poly.length;
  const near = (c: number) =>
    Math.hypot(pt(mesh, c)[0] - cx, pt(mesh, c)[1] - cy);
  const c = near(IRIS_A) <= near(IRIS_B) ? IRIS_A : IRIS_B;
  const [ix, iy] = pt(mesh, c);
  let r = 0;
  for (let k = 1; k < 5; k++) {
    r += Math.hypot(pt(mesh, c + k)[0] - ix, pt(mesh, c + k)[1] - iy) / 4;
  }
  const iris: number[] = [];
  for (const i of insidePolygon(poly, f.width, f.height)) {
    const x = i % f.width + 0.5, y = Math.floor(i / f.width) + 0.5;
    if (Math.hypot(x - ix, y - iy) <= r) iris.push(i);
  }
  const ys = poly.map((p) => p[1]), xs = poly.map((p) => p[0]);
  const h = Math.max(...ys) - Math.min(...ys);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const lid: number[] = [];
  for (
    let x = Math.ceil(x0 + 0.2 * (x1 - x0));
    x <= x1 - 0.2 * (x1 - x0);
    x++
  ) {
    const top = topAt(poly, x + 0.5);
    for (let y = Math.round(top - h); y <= top - 0.3 * h; y++) {
      if (x >= 0 && y >= 0 && x < f.width && y < f.height) {
        lid.push(y * f.width + x);
      }
    }
  }
  return {
    iris: quantile(iris.map((i) => lumaAt(f, i)), 0.5),
    lid: quantile(lid.map((i) => lumaAt(f, i)), 0.75),
    irisUv: medianUv(f, iris),
    lidUv: medianUv(f, lid),
  };
}

/** The highest (least y) point of `poly`'s outline over the column `x`. */
function topAt(poly: Array<[number, number]>, x: number): number {
  let top = Infinity;
  for (let a = 0, b = poly.length - 1; a < poly.length; b = a++) {
    const [xa, ya] = poly[a], [xb, yb] = poly[b];
    if ((xa > x) !== (xb > x)) {
      top = Math.min(top, ya + (x - xa) * (yb - ya) / (xb - xa));
    }
  }
  return top;
}

/** Weight of a chroma difference against a luma one when telling iris from lid. */
const CHROMA_WEIGHT = 2;

/**
 * Share (%) of the pixels inside an eye (`eye`'s lid margin from `eyeMesh`, shrunk by
 * 15 %: the open eye's, for a blink frame, whose own margin has closed) that show the
 * iris: darker than halfway from the open iris's luma to the lid's (`tones`), nearer
 * the iris's tone than the lid's in luma and colour (a shaded lid over a light iris is
 * as dark as the iris, not as blue), and part of a patch at least 3 px thick (an
 * opening by a 3×3 square drops the lashes' line, 1–2 px at 512, where a closed lid
 * meets the lower one; an iris showing through a lid is a wedge, thicker).
 */
export function irisPercent(
  f: RgbFrame,
  eyeMesh: ArrayLike<number>,
  tones: EyeTones,
  eye: number[],
): number {
  const px = insidePolygon(polygon(eyeMesh, eye, 0.15), f.width, f.height);
  if (px.length === 0) return 0;
  const cut = (tones.iris + tones.lid) / 2;
  const W = f.width, H = f.height;
  const at = (x: number, y: number) =>
    x >= 0 && y >= 0 && x < W && y < H ? y * W + x : -1;
  // Iris-like: darker than half way to the lid, and nearer the iris's tone than the
  // lid's, colour included (a light iris is barely darker than a lid in shade; its
  // colour tells them apart).
  const far = (i: number, y: number, uv: [number, number]) => {
    const [u, v] = uvAt(f, i);
    return (lumaAt(f, i) - y) ** 2 +
      (CHROMA_WEIGHT * (u - uv[0])) ** 2 + (CHROMA_WEIGHT * (v - uv[1])) ** 2;
  };
  const irisLike = (i: number) =>
    lumaAt(f, i) < cut &&
    far(i, tones.iris, tones.irisUv) < far(i, tones.lid, tones.lidUv);
  const dark = new Set<number>();
  for (const i of px) {
    const x = i % W, y = Math.floor(i / W);
    for (let dy = -2; dy <= 2; dy++) {
      for (let dx = -2; dx <= 2; dx++) {
        const j = at(x + dx, y + dy);
        if (j >= 0 && irisLike(j)) dark.add(j);
      }
    }
  }
  // Erode, then dilate: a pixel counts if some 3×3 square of dark pixels holds it.
  const square = (i: number, test: (j: number) => boolean, all: boolean) => {
    const x = i % W, y = Math.floor(i / W);
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        const j = at(x + dx, y + dy);
        const hit = j >= 0 && test(j);
        if (all ? !hit : hit) return !all;
      }
    }
    return all;
  };
  const core = new Set<number>();
  for (const i of dark) if (square(i, (j) => dark.has(j), true)) core.add(i);
  let n = 0;
  for (const i of px) if (square(i, (j) => core.has(j), false)) n++;
  return 100 * n / px.length;
}

/** The face's vertical axis (forehead 10 to chin 152): unit vector and length. */
function faceAxis(mesh: ArrayLike<number>) {
  const [x0, y0] = pt(mesh, 10), [x1, y1] = pt(mesh, 152);
  const len = Math.hypot(x1 - x0, y1 - y0);
  return { ux: (x1 - x0) / len, uy: (y1 - y0) / len, len };
}

/**
 * How far apart the lips are: the inner-lip gap at the middle three pairs (13–14,
 * 81–178, 311–402) along the face's vertical axis, over the face's height.
 */
export function lipGap(mesh: ArrayLike<number>): number {
  const { ux, uy, len } = faceAxis(mesh);
  let g = 0;
  for (const [u, l] of [[13, 14], [81, 178], [311, 402]]) {
    const [ax, ay] = pt(mesh, u), [bx, by] = pt(mesh, l);
    g += (bx - ax) * ux + (by - ay) * uy;
  }
  return Math.max(0, g / 3) / len;
}

/** How open the eyes are: each lid gap (159–145, 386–374) over its eye's width, mean. */
export function eyeOpening(mesh: ArrayLike<number>): number {
  const d = (a: number, b: number) =>
    Math.hypot(
      pt(mesh, a)[0] - pt(mesh, b)[0],
      pt(mesh, a)[1] - pt(mesh, b)[1],
    );
  return (d(159, 145) / d(33, 133) + d(386, 374) / d(362, 263)) / 2;
}

/**
 * `rest` moved as the eye moved between the two meshes: each point shifted by the
 * mean shift of the eye's corners (33, 133, 362, 263), which stay put when it blinks.
 */
export function followEyes(
  rest: ArrayLike<number>,
  now: ArrayLike<number>,
): Float32Array {
  let dx = 0, dy = 0;
  for (const i of [33, 133, 362, 263]) {
    dx += (now[i * 3] - rest[i * 3]) / 4;
    dy += (now[i * 3 + 1] - rest[i * 3 + 1]) / 4;
  }
  const out = Float32Array.from(rest);
  for (let i = 0; i < out.length; i += 3) (out[i] += dx, out[i + 1] += dy);
  return out;
}

/** The `q` quantile (0..1) of `xs` (nearest rank); NaN when empty. */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** p95 − p5 of `xs`. */
export function spread(xs: number[]): number {
  return quantile(xs, 0.95) - quantile(xs, 0.05);
}

/** Pearson correlation of two equal-length series; NaN when one is constant. */
export function correlation(a: number[], b: number[]): number {
  const n = a.length;
  if (n < 2) return NaN;
  const ma = a.reduce((s, x) => s + x, 0) / n;
  const mb = b.reduce((s, x) => s + x, 0) / n;
  let sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; i++) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) ** 2;
    sbb += (b[i] - mb) ** 2;
  }
  return sab / Math.sqrt(saa * sbb);
}
