/**
 * Piecewise-affine warp: each moved triangle of the mesh is filled in the frame by
 * mapping its pixels back into the photo (one affine map per triangle) and sampling
 * there bilinearly, luma at full size and chroma at half, composited over the
 * background by the person's alpha, warped the same way. Triangles that did not move
 * keep the rest frame's pixels (copied whole beforehand), so a frame costs what moves.
 */

/** The photo's planes and, when the background is replaced, what goes behind it. */
export interface WarpSource {
  width: number;
  height: number;
  y: Uint8Array;
  u: Uint8Array;
  v: Uint8Array;
  /** Person alpha; null: the photo's own background stays (no compositing). */
  alpha: Uint8Array | null;
  /** The background as an I420 frame, when `alpha` is given. */
  bg: Uint8Array | null;
}

/** Bilinear sample of `plane` (`w`×`h`) at index coordinates (x, y), clamped. */
export function bilinear(
  plane: Uint8Array,
  w: number,
  h: number,
  x: number,
  y: number,
): number {
  if (x < 0) x = 0;
  else if (x > w - 1.001) x = w - 1.001;
  if (y < 0) y = 0;
  else if (y > h - 1.001) y = h - 1.001;
  const ix = x | 0, iy = y | 0;
  const fx = x - ix, fy = y - iy;
  const i = iy * w + ix;
  const top = plane[i] + (plane[i + 1] - plane[i]) * fx;
  const bot = plane[i + w] + (plane[i + w + 1] - plane[i + w]) * fx;
  return top + (bot - top) * fy;
}

/**
 * Bilinear sample in 16.16 fixed point (weights to 8 bits) of `p` (row stride `w`) at
 * (u, v), both already inside [0, size − 1).
 */
function sample(p: Uint8Array, w: number, u: number, v: number): number {
  const i = (v >> 16) * w + (u >> 16);
  const fx = (u >> 8) & 255, fy = (v >> 8) & 255;
  const top = p[i] * (256 - fx) + p[i + 1] * fx;
  const bot = p[i + w] * (256 - fx) + p[i + w + 1] * fx;
  return (top * (256 - fy) + bot * fy + 32768) >> 16;
}

const FX = 65536;

/**
 * Writes `n` pixels from frame index `i` on, sampling the photo from (u, v) in steps
 * of (du, dv), all in 16.16 fixed point and inside the photo.
 */
type Run = (
  i: number,
  n: number,
  u: number,
  v: number,
  du: number,
  dv: number,
) => void;

/**
 * Fills the frame triangle `d` (x, y ×3) of one plane (`w`×`h`, luma scale 1 or chroma
 * scale 2) from the photo through the affine map (ax, bx, cx; ay, by, cy) (frame luma
 * coordinates → photo luma coordinates), span by span through `run`.
 */
function fill(
  d: ArrayLike<number>,
  scale: number,
  w: number,
  h: number,
  ax: number,
  bx: number,
  cx: number,
  ay: number,
  by: number,
  cy: number,
  run: Run,
): void {
  const x0 = d[0] / scale,
    y0 = d[1] / scale,
    x1 = d[2] / scale,
    y1 = d[3] / scale;
  const x2 = d[4] / scale, y2 = d[5] / scale;
  const r0 = Math.max(0, Math.ceil(Math.min(y0, y1, y2) - 0.5));
  const r1 = Math.min(h, Math.ceil(Math.max(y0, y1, y2) - 0.5));
  const maxU = w - 1, maxV = h - 1;
  // In plane coordinates: (X, Y) plane → luma (s·X, s·Y) → photo luma → photo plane / s.
  const pcx = cx / scale - 0.5, pcy = cy / scale - 0.5;
  const du = Math.round(ax * FX), dv = Math.round(ay * FX);
  for (let row = r0; row < r1; row++) {
    const yc = row + 0.5;
    let lo = Infinity, hi = -Infinity;
    // Half-open in y per edge, so shared edges are filled once.
    if ((y0 <= yc) !== (y1 <= yc)) {
      const x = x0 + (x1 - x0) * (yc - y0) / (y1 - y0);
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    if ((y1 <= yc) !== (y2 <= yc)) {
      const x = x1 + (x2 - x1) * (yc - y1) / (y2 - y1);
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    if ((y2 <= yc) !== (y0 <= yc)) {
      const x = x2 + (x0 - x2) * (yc - y2) / (y0 - y2);
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    const xa = Math.max(0, Math.ceil(lo - 0.5));
    const xb = Math.min(w, Math.ceil(hi - 0.5));
    if (xb <= xa) continue;
    const u = ax * (xa + 0.5) + bx * yc + pcx;
    const v = ay * (xa + 0.5) + by * yc + pcy;
    const ue = u + ax * (xb - xa - 1), ve = v + ay * (xb - xa - 1);
    if (
      u >= 0 && ue >= 0 && v >= 0 && ve >= 0 && u < maxU && ue < maxU &&
      v < maxV && ve < maxV
    ) {
      run(
        row * w + xa,
        xb - xa,
        Math.round(u * FX),
        Math.round(v * FX),
        du,
        dv,
      );
      continue;
    }
    // The span reaches the photo's edge: clamped pixel by pixel.
    for (let x = xa; x < xb; x++) {
      const cu = Math.min(maxU - 0.01, Math.max(0, u + ax * (x - xa)));
      const cv = Math.min(maxV - 0.01, Math.max(0, v + ay * (x - xa)));
      run(row * w + x, 1, Math.round(cu * FX), Math.round(cv * FX), 0, 0);
    }
  }
}

/** Writes warped triangles into one frame; one per painter (no allocation per frame). */
export class Warper {
  #src: WarpSource;
  #out: Uint8Array = new Uint8Array(0);
  #alphaOut: Uint8Array | null = null;
  #runY: Run;
  #runC: Run;

  constructor(src: WarpSource) {
    this.#src = src;
    const { width: w, height: h, y: py, u: pu, v: pv, alpha, bg } = src;
    const cw = w >> 1, uOff = w * h, vOff = uOff + cw * (h >> 1);
    const lastU = (w - 1.01) * FX, lastV = (h - 1.01) * FX;
    if (alpha && bg) {
      this.#runY = (i, n, u, v, du, dv) => {
        const out = this.#out, ao = this.#alphaOut;
        for (const end = i + n; i < end; i++, u += du, v += dv) {
          const a = sample(alpha, w, u, v);
          out[i] = (sample(py, w, u, v) * a + bg[i] * (255 - a) + 127) / 255;
          if (ao) ao[i] = a;
        }
      };
      this.#runC = (i, n, u, v, du, dv) => {
        const out = this.#out;
        for (const end = i + n; i < end; i++, u += du, v += dv) {
          // Alpha at the matching luma point (u, v are chroma-plane coordinates).
          const a = sample(
            alpha,
            w,
            Math.min(2 * u + FX / 2, lastU),
            Math.min(2 * v + FX / 2, lastV),
          );
          out[uOff + i] =
            (sample(pu, cw, u, v) * a + bg[uOff + i] * (255 - a) + 127) / 255;
          out[vOff + i] =
            (sample(pv, cw, u, v) * a + bg[vOff + i] * (255 - a) + 127) / 255;
        }
      };
    } else {
      this.#runY = (i, n, u, v, du, dv) => {
        const out = this.#out;
        for (const end = i + n; i < end; i++, u += du, v += dv) {
          out[i] = sample(py, w, u, v);
        }
      };
      this.#runC = (i, n, u, v, du, dv) => {
        const out = this.#out;
        for (const end = i + n; i < end; i++, u += du, v += dv) {
          out[uOff + i] = sample(pu, cw, u, v);
          out[vOff + i] = sample(pv, cw, u, v);
        }
      };
    }
  }

  /** Targets `out` (and `alphaOut`, when compositing) for the next triangles. */
  begin(out: Uint8Array, alphaOut: Uint8Array | null): void {
    this.#out = out;
    this.#alphaOut = alphaOut;
  }

  /** Warps the triangle with frame corners `d` and photo corners `s` (x, y ×3). */
  triangle(d: ArrayLike<number>, s: ArrayLike<number>): void {
    const [dx0, dy0, dx1, dy1, dx2, dy2] = [d[0], d[1], d[2], d[3], d[4], d[5]];
    const det = (dx1 - dx0) * (dy2 - dy0) - (dx2 - dx0) * (dy1 - dy0);
    if (Math.abs(det) < 1e-9) return;
    // Affine frame → photo: s = (ax·x + bx·y + cx, ay·x + by·y + cy).
    const ex1 = dx1 - dx0, ey1 = dy1 - dy0, ex2 = dx2 - dx0, ey2 = dy2 - dy0;
    const i00 = ey2 / det, i01 = -ex2 / det, i10 = -ey1 / det, i11 = ex1 / det;
    const su1 = s[2] - s[0],
      su2 = s[4] - s[0],
      sv1 = s[3] - s[1],
      sv2 = s[5] - s[1];
    const ax = su1 * i00 + su2 * i10, bx = su1 * i01 + su2 * i11;
    const ay = sv1 * i00 + sv2 * i10, by = sv1 * i01 + sv2 * i11;
    const cx = s[0] - ax * dx0 - bx * dy0, cy = s[1] - ay * dx0 - by * dy0;
    const { width: w, height: h } = this.#src;
    fill(d, 1, w, h, ax, bx, cx, ay, by, cy, this.#runY);
    fill(
      d,
      2,
      w >> 1,
      h >> 1,
      ax,
      bx,
      cx,
      ay,
      by,
      cy,
      this.#runC,
    );
  }
}
