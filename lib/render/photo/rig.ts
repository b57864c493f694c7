/**
 * The rig of a photo avatar, derived once from its landmarks (cached per avatar): the
 * mesh (landmarks plus anchors around the head and on the frame, Delaunay-triangulated
 * with the mouth and the eyes left as holes), what each vertex follows (the head, the
 * jaw, the upper or lower lip), the jaw's pivot, the eyes' irises, and the tones the
 * mouth's inside is shaded with, sampled from the photo's own light.
 */
import { type FaceAxes, faceAxes, toFaceFrame } from "./head3d.ts";
import { meshWithHoles } from "./mesh.ts";
import { insidePolygon, polylineY, smoothstep } from "./geometry.ts";
import {
  CHEEK_A,
  CHEEK_B,
  CHIN,
  EYE_A_LOWER,
  EYE_A_UPPER,
  EYE_B_LOWER,
  EYE_B_UPPER,
  FACE_OVAL,
  FOREHEAD,
  IRIS_START,
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
  LIP_OUTER_LOWER,
  LIP_OUTER_UPPER,
} from "./landmarks.ts";
import type { PhotoAvatar } from "./types.ts";
import {
  type EyeRig,
  eyeRig,
  lidKnots,
  sampleTone,
  type Tone,
} from "./regions.ts";
import { type PhotoTeeth, photoTeeth } from "./teeth.ts";

export type { EyeRig, PhotoTeeth, Tone };

/** Vertex roles around the mouth. */
export const LIP_NONE = 0, LIP_UPPER = 1, LIP_LOWER = 2;

export interface Rig {
  avatarId: string;
  width: number;
  height: number;
  /** Vertex count: the 468 face landmarks, then anchors. */
  n: number;
  /** Rest positions (and where each vertex samples the photo), and depth. */
  sx: Float64Array;
  sy: Float64Array;
  z: Float64Array;
  /**
   * Rest positions in the face's own frame (./head3d.ts: a turned or tilted face
   * de-rotated about the mouth's centre): the jaw, lips and lids are posed there and
   * turned back onto the picture by `axes`.
   */
  fx: Float64Array;
  fy: Float64Array;
  fz: Float64Array;
  axes: FaceAxes;
  tris: Uint32Array;
  /** How much a vertex follows the head's motion and the jaw's rotation, 0..1. */
  headW: Float32Array;
  jawW: Float32Array;
  /** LIP_* role, and for lip vertices the distance from the lip's inner edge (px). */
  lip: Uint8Array;
  lipD: Float32Array;
  /** Rest gap between the inner lips at each vertex's x (px). */
  lipGap: Float32Array;
  /**
   * Mouth centre (between the corners, the same in both frames) and half its width;
   * the face's size (face frame).
   */
  mouthX: number;
  mouthY: number;
  mouthHw: number;
  faceW: number;
  faceH: number;
  /**
   * The jaw's pivot (face frame: behind the face, at the ears' height) and the head's
   * (image: the neck, under the head's centre of depth).
   */
  pivotY: number;
  pivotZ: number;
  neckX: number;
  neckY: number;
  neckZ: number;
  /**
   * Landmarks whose head motion `headFit` fits one affine map to (eyes, nose, mouth:
   * near one plane), and its least-squares solver (3 × k, row-major) over their rest
   * positions: the interiors undo the head's motion through that map.
   */
  fitIdx: Uint16Array;
  headFit: Float64Array;
  eyes: [EyeRig, EyeRig];
  skin: Tone;
  lipTone: Tone;
  /** −1 lit from the image's left … 1 from its right (cheek luma difference). */
  light: number;
  /**
   * The photo's upper teeth (a smile's), from its teeth layer: shown, not drawn, where
   * the mouth opens; drawn ones (the lower row) take their tone. Null: none show.
   */
  photoTeeth: PhotoTeeth | null;
}

const MESH_LANDMARKS = IRIS_START;

function contourXY(idx: number[], xs: Float64Array, ys: Float64Array) {
  return { x: idx.map((i) => xs[i]), y: idx.map((i) => ys[i]) };
}

/** Builds the rig of `a` (landmarks checked by the caller). */
export function buildRig(a: PhotoAvatar): Rig {
  const W = a.width, H = a.height, lm = a.landmarks;
  const px: number[] = [], py: number[] = [], pz: number[] = [];
  for (let i = 0; i < MESH_LANDMARKS; i++) {
    px.push(lm[i * 3]), py.push(lm[i * 3 + 1]), pz.push(lm[i * 3 + 2]);
  }
  // The lower inner lip at least a pixel below the upper one: two lips on one spot
  // could not part.
  for (let k = 1; k < LIP_INNER_UPPER.length - 1; k++) {
    const u = LIP_INNER_UPPER[k], l = LIP_INNER_LOWER[k];
    if (py[l] < py[u] + 1) py[l] = py[u] + 1;
  }
  const faceH = py[CHIN] - py[FOREHEAD];
  const faceW = px[CHEEK_B] - px[CHEEK_A];
  let ox0 = Infinity, ox1 = -Infinity, oy0 = Infinity, oy1 = -Infinity;
  for (const i of FACE_OVAL) {
    ox0 = Math.min(ox0, px[i]), ox1 = Math.max(ox1, px[i]);
    oy0 = Math.min(oy0, py[i]), oy1 = Math.max(oy1, py[i]);
  }
  const fcx = (ox0 + ox1) / 2, fcy = (oy0 + oy1) / 2;
  const rx = (ox1 - ox0) / 2, ry = (oy1 - oy0) / 2;
  // The face's own axes, about the mouth's centre.
  const axes = faceAxes(px, py, pz, [
    (px[61] + px[291]) / 2,
    (py[61] + py[291]) / 2,
    (pz[61] + pz[291]) / 2,
  ]);
  const am = axes.m;
  // The head's centre of depth (behind the cheeks, near the ears): what is not face
  // (hair, hat, ears, the head's outline) turns about it and barely moves sideways.
  const headZ = (pz[CHEEK_A] + pz[CHEEK_B]) / 2 + 0.1 * faceW;

  // Anchors: rings around the head (the hair and the hat go with it, the background
  // gives), and the frame's edges just outside it (still). The innermost ring leaves
  // out the throat under the chin: the chin drops over it when the jaw opens.
  for (const r of [1.2, 1.45, 1.75, 2.1, 2.6]) {
    for (let k = 0; k < 24; k++) {
      const t = (k + 0.5) / 24 * Math.PI * 2;
      const c = Math.cos(t), sn = Math.sin(t);
      if (r === 1.2 && c * am[1] + sn * am[4] > 0.35) continue;
      const x = fcx + c * rx * r;
      const y = fcy + sn * ry * r * (sn < 0 ? 1.15 : 1);
      if (x < 4 || x > W - 4 || y < 4 || y > H - 4) continue;
      px.push(x), py.push(y), pz.push(headZ);
    }
  }
  // Around each eye, a band above the upper lid (the skin a blink stretches) and
  // one below the lower lid, so the lids' motion stays near the eye (not the brows,
  // not the rims of glasses).
  const eyeSets = [[EYE_A_UPPER, EYE_A_LOWER], [EYE_B_UPPER, EYE_B_LOWER]];
  const lidBands: number[] = [];
  const landmarkX = Float64Array.from(px), landmarkY = Float64Array.from(py);
  const eyes = eyeSets.map(([up, lo]) =>
    eyeRig(a, up, lo, landmarkX, landmarkY)
  ) as [EyeRig, EyeRig];
  for (const [e, [up, lo]] of eyeSets.entries()) {
    const eyeZ = (pz[up[0]] + pz[up[up.length - 1]]) / 2;
    for (
      const [x, y, side] of lidKnots(eyes[e], up, lo, landmarkX, landmarkY)
    ) {
      lidBands.push(px.length, side);
      px.push(x), py.push(y), pz.push(eyeZ);
    }
  }
  for (let k = 0; k <= 8; k++) {
    const s = k * W / 8;
    px.push(s, s), py.push(-1, H + 1), pz.push(headZ, headZ);
    if (k > 0 && k < 8) {
      px.push(-1, W + 1), py.push(s, s), pz.push(headZ, headZ);
    }
  }
  const n = px.length;
  const sx = Float64Array.from(px), sy = Float64Array.from(py);
  const sz = Float64Array.from(pz);
  const { fx, fy, fz } = toFaceFrame(axes, sx, sy, sz);
  // The face's size along its own axes.
  const fH = fy[CHIN] - fy[FOREHEAD], fW = fx[CHEEK_B] - fx[CHEEK_A];

  // What follows the head: inside the head's ellipse (taller above, for hair and
  // hats) fully, fading out towards the shoulders and the background.
  const headW = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const dy = (sy[i] - fcy) / (ry * (sy[i] < fcy ? 1.45 : 1));
    const r = Math.hypot((sx[i] - fcx) / rx, dy);
    let w = 1 - smoothstep(1.25, 1.7, r);
    if (sy[i] > oy1) w *= 1 - smoothstep(0, 0.5 * faceH, sy[i] - oy1);
    headW[i] = i < MESH_LANDMARKS ? 1 : w;
  }

  // Lips: which vertex is on which lip, and how far from its inner edge.
  const lip = new Uint8Array(n),
    lipD = new Float32Array(n),
    lipGap = new Float32Array(n);
  const iu = contourXY(LIP_INNER_UPPER, fx, fy),
    il = contourXY(LIP_INNER_LOWER, fx, fy);
  const ou = contourXY(LIP_OUTER_UPPER, fx, fy),
    ol = contourXY(LIP_OUTER_LOWER, fx, fy);
  const lipPoly = {
    x: [...ou.x, ...[...ol.x].reverse()],
    y: [...ou.y, ...[...ol.y].reverse()],
  };
  for (let i = 0; i < MESH_LANDMARKS; i++) {
    const x = fx[i], y = fy[i];
    if (!insidePolygon(lipPoly.x, lipPoly.y, x, y)) continue;
    const yu = polylineY(iu.x, iu.y, x), yl = polylineY(il.x, il.y, x);
    if (y <= (yu + yl) / 2) {
      lip[i] = LIP_UPPER;
      lipD[i] = Math.max(0, yu - y);
    } else {
      lip[i] = LIP_LOWER;
      lipD[i] = Math.max(0, y - yl);
    }
    lipGap[i] = yl - yu;
  }
  for (const c of [61, 291, 78, 308]) lip[c] = LIP_NONE;

  // The jaw: everything below the line ear → mouth corner → mouth corner → ear turns
  // with it; skin near that line gives, more on the cheeks than at the lips.
  const mouthX = (fx[61] + fx[291]) / 2, mouthY = (fy[61] + fy[291]) / 2;
  const mouthHw = (fx[291] - fx[61]) / 2;
  const split = {
    x: [fx[CHEEK_A], fx[61], fx[291], fx[CHEEK_B]],
    y: [fy[CHEEK_A], fy[61], fy[291], fy[CHEEK_B]],
  };
  // Anchors (the throat, the collar, the hair, the background) keep still: the chin
  // drops over the throat, which stretches, and nothing below it is dragged along.
  const jawW = new Float32Array(n);
  for (let i = 0; i < MESH_LANDMARKS; i++) {
    if (lip[i] !== LIP_NONE) {
      jawW[i] = lip[i] === LIP_LOWER ? 1 : 0;
      continue;
    }
    const side = Math.min(
      1,
      Math.max(
        0,
        (Math.abs(fx[i] - mouthX) - mouthHw) / Math.max(1, fW / 2 - mouthHw),
      ),
    );
    const band = (0.035 + 0.13 * side) * fH;
    jawW[i] = smoothstep(
      -0.4 * band,
      band,
      fy[i] - polylineY(split.x, split.y, fx[i]),
    );
  }
  for (const c of [61, 291, 78, 308]) jawW[c] = 0.5;

  // Topology from the face posed open (mouth apart, eyes wide, down the face's own
  // axis), so the holes are wide and the lips' and lids' contour edges come out as
  // triangle edges.
  const open = new Float64Array(n);
  const innerLips = new Set([...LIP_INNER_UPPER, ...LIP_INNER_LOWER]);
  for (let i = 0; i < MESH_LANDMARKS; i++) {
    open[i] += jawW[i] * 0.12 * fH - (lip[i] === LIP_UPPER ? 0.02 * fH : 0);
    // Lip points lying on the inner contour (rounded landmarks do) step off it.
    if (lip[i] !== LIP_NONE && !innerLips.has(i)) {
      open[i] += lip[i] === LIP_UPPER ? -2 : 2;
    }
  }
  for (const [up, lo] of eyeSets) {
    for (let k = 1; k < up.length - 1; k++) {
      open[up[k]] -= 0.03 * fH;
      open[lo[k]] += 0.03 * fH;
    }
  }
  for (let k = 0; k < lidBands.length; k += 2) {
    open[lidBands[k]] += lidBands[k + 1] > 0 ? 0.03 * fH : -0.03 * fH;
  }
  const ox = Float64Array.from(sx, (x, i) => x + am[1] * open[i]);
  const oy = Float64Array.from(sy, (y, i) => y + am[4] * open[i]);
  const tris = meshWithHoles(ox, oy, eyeSets);

  const cheekR = 0.05 * faceW;
  const cheek = (eye: number, corner: number, dir: number) => {
    const x = (sx[eye] + sx[corner]) / 2 + dir * 0.06 * faceW;
    const y = (sy[eye] + mouthY) / 2;
    return sampleTone(a, x - cheekR, y - cheekR, x + cheekR, y + cheekR);
  };
  const ca = cheek(145, 61, -1), cb = cheek(374, 291, 1);
  // The photo's own lips and teeth are sampled along the picture's contours.
  const iuP = contourXY(LIP_INNER_UPPER, sx, sy),
    ilP = contourXY(LIP_INNER_LOWER, sx, sy);
  const ouP = contourXY(LIP_OUTER_UPPER, sx, sy),
    olP = contourXY(LIP_OUTER_LOWER, sx, sy);
  const polyP = {
    x: [...ouP.x, ...[...olP.x].reverse()],
    y: [...ouP.y, ...[...olP.y].reverse()],
  };
  const inLips = (x: number, y: number) =>
    insidePolygon(polyP.x, polyP.y, x, y) &&
    (y < polylineY(iuP.x, iuP.y, x) - 0.5 ||
      y > polylineY(ilP.x, ilP.y, x) + 0.5);
  const lipTone = sampleTone(
    a,
    sx[61],
    Math.min(...ouP.y),
    sx[291],
    Math.max(...olP.y),
    inLips,
  );
  return {
    avatarId: a.avatarId,
    width: W,
    height: H,
    n,
    sx,
    sy,
    z: sz,
    fx,
    fy,
    fz,
    axes,
    tris,
    headW,
    jawW,
    lip,
    lipD,
    lipGap,
    mouthX,
    mouthY,
    mouthHw,
    faceW: fW,
    faceH: fH,
    pivotY: (fy[CHEEK_A] + fy[CHEEK_B]) / 2,
    pivotZ: fz[CHIN] + 0.85 * fH,
    neckX: sx[CHIN],
    neckY: sy[CHIN] + 0.25 * faceH,
    neckZ: headZ,
    fitIdx: Uint16Array.from(FIT),
    headFit: affineSolver(FIT.map((i) => sx[i]), FIT.map((i) => sy[i])),
    eyes,
    skin: { y: (ca.y + cb.y) / 2, u: (ca.u + cb.u) / 2, v: (ca.v + cb.v) / 2 },
    lipTone,
    light: Math.max(-1, Math.min(1, (cb.y - ca.y) / 40)),
    photoTeeth: photoTeeth(a.teeth, faceH, (ca.y + cb.y) / 2, lipTone),
  };
}

/** Landmarks the interiors' affine view of the head's motion is fitted to. */
const FIT = [33, 133, 362, 263, 159, 145, 386, 374, 168, 1, 61, 291, 13, 14];

/**
 * The least-squares solver of an affine map over the points `xs`, `ys`: the 3 × k
 * matrix (AᵀA)⁻¹Aᵀ of A's rows (x, y, 1), row-major.
 */
function affineSolver(xs: number[], ys: number[]): Float64Array {
  const k = xs.length;
  let sxx = 0, sxy = 0, syy = 0, sx = 0, sy = 0;
  for (let i = 0; i < k; i++) {
    sxx += xs[i] * xs[i], sxy += xs[i] * ys[i], syy += ys[i] * ys[i];
    sx += xs[i], sy += ys[i];
  }
  // Inverse of the symmetric [[sxx, sxy, sx], [sxy, syy, sy], [sx, sy, k]].
  const a = syy * k - sy * sy,
    b = -(sxy * k - sy * sx),
    c = sxy * sy - syy * sx;
  const d = sxx * k - sx * sx, e = -(sxx * sy - sxy * sx);
  const f = sxx * syy - sxy * sxy;
  const det = sxx * a + sxy * b + sx * c;
  const inv = [a, b, c, b, d, e, c, e, f].map((v) => v / det);
  const out = new Float64Array(3 * k);
  for (let r = 0; r < 3; r++) {
    for (let i = 0; i < k; i++) {
      out[r * k + i] = inv[r * 3] * xs[i] + inv[r * 3 + 1] * ys[i] +
        inv[r * 3 + 2];
    }
  }
  return out;
}
