/**
 * The person mask refined against the photo, once at upload (DECISIONS 12): the
 * segmentation model's mask is coarse (found at 256 px and scaled up) and may hold
 * ghosts of the background (another person, a crest or a curtain that looked like
 * one). Kept: the one part of it connected to the face, its face solid; its edge then
 * follows the photo's own edges (a guided filter over the photo's colours), so hair
 * and ears are solid where the photo shows them and the background is not.
 */
import { insidePolygon } from "../render/photo/geometry.ts";
import { FACE_OVAL } from "../render/photo/landmarks.ts";

/** Box radius of the guided filter (px at 512²) and its regularisation (0..1 units). */
const RADIUS = 5;
/** Radius (px) over which an unsure pixel's person and background colours are found. */
const LOCAL = 10;
const EPS = 0.004;
/** How far (px) the kept part's edge may grow back out of the mask. */
const GROW = 6;

/**
 * `alpha` (0..255, `w`×`h`) refined against the photo `rgb` (3 bytes a pixel), the
 * face given by its `landmarks` (x, y, z each, in the same pixels): see the module.
 */
export function refineMatte(
  rgb: Uint8Array,
  alpha: Uint8Array,
  w: number,
  h: number,
  landmarks: Float32Array,
): Uint8Array {
  const n = w * h;
  const ox = FACE_OVAL.map((i) => landmarks[i * 3]),
    oy = FACE_OVAL.map((i) => landmarks[i * 3 + 1]);
  // The face is the person, whatever the model thought of it.
  const a = Float32Array.from(alpha, (v) => v / 255);
  const x0 = Math.max(0, Math.floor(Math.min(...ox))),
    x1 = Math.min(w, Math.ceil(Math.max(...ox)));
  const y0 = Math.max(0, Math.floor(Math.min(...oy))),
    y1 = Math.min(h, Math.ceil(Math.max(...oy)));
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      if (insidePolygon(ox, oy, x + 0.5, y + 0.5)) a[y * w + x] = 1;
    }
  }
  unmix(rgb, a, w, h);
  const cx = Math.round((x0 + x1) / 2), cy = Math.round((y0 + y1) / 2);
  const keep = connectedTo(a, w, h, cx, cy);
  const near = grow(keep, w, h, GROW);
  for (let i = 0; i < n; i++) a[i] *= near[i];
  const q = guided(rgb, a, w, h);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    // The filter's soft ramp made firmer: a solid person, a clean background, a
    // pixel or two of blend at the edge.
    const v = Math.min(1, Math.max(0, (q[i] - 0.12) / 0.76)) * near[i];
    out[i] = Math.round(255 * v * v * (3 - 2 * v));
  }
  // Specks the filter raised out of the band around the person go again.
  const solid = Float32Array.from(out, (v) => v / 255);
  const person = connectedTo(solid, w, h, cx, cy);
  for (let i = 0; i < n; i++) if (out[i] >= 128 && !person[i]) out[i] = 0;
  return out;
}

/**
 * Where the mask is unsure (5–95 %), how much of the pixel's colour is the person's:
 * its position between the mean colour of the sure person and of the sure background
 * around it (a translucent ear the colour of the face is the person; a ghost the
 * colour of the wall is not). Left as it is where either is missing nearby.
 */
function unmix(rgb: Uint8Array, a: Float32Array, w: number, h: number): void {
  const n = w * h;
  const fg = Float32Array.from(a, (v) => v >= 0.95 ? 1 : 0);
  const bg = Float32Array.from(a, (v) => v <= 0.05 ? 1 : 0);
  const sum = (v: Float32Array) => boxMean(v, w, h, LOCAL);
  const nf = sum(fg), nb = sum(bg);
  const F = [0, 1, 2].map((c) =>
    sum(Float32Array.from(fg, (v, i) => v * rgb[i * 3 + c]))
  );
  const B = [0, 1, 2].map((c) =>
    sum(Float32Array.from(bg, (v, i) => v * rgb[i * 3 + c]))
  );
  for (let i = 0; i < n; i++) {
    if (a[i] <= 0.05 || a[i] >= 0.95 || nf[i] < 0.01 || nb[i] < 0.01) continue;
    let dot = 0, len = 0;
    for (let c = 0; c < 3; c++) {
      const f = F[c][i] / nf[i], b = B[c][i] / nb[i];
      dot += (rgb[i * 3 + c] - b) * (f - b);
      len += (f - b) * (f - b);
    }
    // Person and background alike in colour: the model's guess stands.
    if (len < 900) continue;
    a[i] = Math.min(1, Math.max(0, dot / len));
  }
}

/** 1 where `a` ≥ ½ and connected (4-neighbours) to (sx, sy), else 0. */
export function connectedTo(
  a: Float32Array,
  w: number,
  h: number,
  sx: number,
  sy: number,
): Uint8Array {
  const keep = new Uint8Array(w * h);
  const start = sy * w + sx;
  if (a[start] < 0.5) return keep;
  const stack = new Int32Array(w * h);
  let top = 0;
  stack[top++] = start;
  keep[start] = 1;
  while (top > 0) {
    const i = stack[--top], x = i % w;
    for (let k = 0; k < 4; k++) {
      const j = k === 0
        ? (x > 0 ? i - 1 : -1)
        : k === 1
        ? (x < w - 1 ? i + 1 : -1)
        : k === 2
        ? i - w
        : i + w;
      if (j < 0 || j >= w * h || keep[j] || a[j] < 0.5) continue;
      keep[j] = 1;
      stack[top++] = j;
    }
  }
  return keep;
}

/** `m` (0/1) grown by `r` px (a square), as 0/1 floats. */
function grow(m: Uint8Array, w: number, h: number, r: number): Float32Array {
  const tmp = new Uint8Array(w * h), out = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    // Two sweeps per row: the nearest set pixel on either side within r.
    let last = -1e9;
    for (let x = 0; x < w; x++) {
      if (m[y * w + x]) last = x;
      if (x - last <= r) tmp[y * w + x] = 1;
    }
    last = 1e9;
    for (let x = w - 1; x >= 0; x--) {
      if (m[y * w + x]) last = x;
      if (last - x <= r) tmp[y * w + x] = 1;
    }
  }
  for (let x = 0; x < w; x++) {
    let last = -1e9;
    for (let y = 0; y < h; y++) {
      if (tmp[y * w + x]) last = y;
      if (y - last <= r) out[y * w + x] = 1;
    }
    last = 1e9;
    for (let y = h - 1; y >= 0; y--) {
      if (tmp[y * w + x]) last = y;
      if (last - y <= r) out[y * w + x] = 1;
    }
  }
  return out;
}

/** Mean of `v` over the (2r+1)² box around each pixel (clipped at the sides). */
function boxMean(
  v: Float32Array,
  w: number,
  h: number,
  r = RADIUS,
): Float32Array {
  const tmp = new Float32Array(w * h),
    out = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    let s = 0;
    const row = y * w;
    for (let x = 0; x < Math.min(w, r); x++) s += v[row + x];
    for (let x = 0; x < w; x++) {
      if (x + r < w) s += v[row + x + r];
      if (x - r - 1 >= 0) s -= v[row + x - r - 1];
      tmp[row + x] = s / (Math.min(w - 1, x + r) - Math.max(0, x - r) + 1);
    }
  }
  for (let x = 0; x < w; x++) {
    let s = 0;
    for (let y = 0; y < Math.min(h, r); y++) s += tmp[y * w + x];
    for (let y = 0; y < h; y++) {
      if (y + r < h) s += tmp[(y + r) * w + x];
      if (y - r - 1 >= 0) s -= tmp[(y - r - 1) * w + x];
      out[y * w + x] = s / (Math.min(h - 1, y + r) - Math.max(0, y - r) + 1);
    }
  }
  return out;
}

/**
 * He, Sun and Tang's guided filter of `p` with the colour photo `rgb` as its guide:
 * per box, `p` as an affine function of the three colours (a 3×3 solve), averaged.
 */
function guided(
  rgb: Uint8Array,
  p: Float32Array,
  w: number,
  h: number,
): Float32Array {
  const n = w * h;
  const I = [0, 1, 2].map((c) =>
    Float32Array.from({ length: n }, (_, i) => rgb[i * 3 + c] / 255)
  );
  const m = (v: Float32Array) => boxMean(v, w, h);
  const prod = (a: Float32Array, b: Float32Array) =>
    Float32Array.from(a, (v, i) => v * b[i]);
  const mI = I.map(m), mp = m(p);
  const mIp = I.map((c) => m(prod(c, p)));
  const pairs = [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [2, 2]];
  const mII = pairs.map(([a, b]) => m(prod(I[a], I[b])));
  const A = [new Float32Array(n), new Float32Array(n), new Float32Array(n)];
  const B = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r0 = mI[0][i], g0 = mI[1][i], b0 = mI[2][i];
    const rr = mII[0][i] - r0 * r0 + EPS,
      rg = mII[1][i] - r0 * g0,
      rb = mII[2][i] - r0 * b0,
      gg = mII[3][i] - g0 * g0 + EPS,
      gb = mII[4][i] - g0 * b0,
      bb = mII[5][i] - b0 * b0 + EPS;
    const cr = mIp[0][i] - r0 * mp[i],
      cg = mIp[1][i] - g0 * mp[i],
      cb = mIp[2][i] - b0 * mp[i];
    // Σ⁻¹ (symmetric) by cofactors.
    const i00 = gg * bb - gb * gb,
      i01 = rb * gb - rg * bb,
      i02 = rg * gb - rb * gg,
      i11 = rr * bb - rb * rb,
      i12 = rb * rg - rr * gb,
      i22 = rr * gg - rg * rg;
    const det = rr * i00 + rg * i01 + rb * i02;
    const ar = (i00 * cr + i01 * cg + i02 * cb) / det;
    const ag = (i01 * cr + i11 * cg + i12 * cb) / det;
    const ab = (i02 * cr + i12 * cg + i22 * cb) / det;
    A[0][i] = ar, A[1][i] = ag, A[2][i] = ab;
    B[i] = mp[i] - ar * r0 - ag * g0 - ab * b0;
  }
  const mA = A.map(m), mB = m(B);
  const q = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    q[i] = mA[0][i] * I[0][i] + mA[1][i] * I[1][i] + mA[2][i] * I[2][i] +
      mB[i];
  }
  return q;
}
