/**
 * The rig of a photo avatar, derived once from its landmarks (cached per avatar): the
 * mesh (landmarks plus anchors around the head and on the frame, Delaunay-triangulated
 * with the mouth and the eyes left as holes), what each vertex follows (the head, the
 * jaw, the upper or lower lip), the jaw's pivot, the eyes' irises, and the tones the
 * mouth's inside is shaded with, sampled from the photo's own light.
 */
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
import { type EyeRig, eyeRig, sampleTone, type Tone } from "./regions.ts";
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
  /** Rest positions (and where each vertex samples the photo). */
  sx: Float64Array;
  sy: Float64Array;
  z: Float64Array;
  tris: Uint32Array;
  /** How much a vertex follows the head's motion and the jaw's rotation, 0..1. */
  headW: Float32Array;
  jawW: Float32Array;
  /** LIP_* role, and for lip vertices the distance from the lip's inner edge (px). */
  lip: Uint8Array;
  lipD: Float32Array;
  /** Rest gap between the inner lips at each vertex's x (px). */
  lipGap: Float32Array;
  /** Mouth centre (between the corners) and half its width; the face's size. */
  mouthX: number;
  mouthY: number;
  mouthHw: number;
  faceW: number;
  faceH: number;
  /** The jaw's pivot (behind the face, at the ears' height) and the head's (the neck). */
  pivotY: number;
  pivotZ: number;
  neckX: number;
  neckY: number;
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

  // Anchors: rings around the head (the hair and the hat go with it, the background
  // gives), and the frame's edges just outside it (still).
  for (const r of [1.2, 1.45, 1.75, 2.1, 2.6]) {
    for (let k = 0; k < 24; k++) {
      const t = (k + 0.5) / 24 * Math.PI * 2;
      const x = fcx + Math.cos(t) * rx * r;
      const y = fcy + Math.sin(t) * ry * r * (Math.sin(t) < 0 ? 1.15 : 1);
      if (x < 4 || x > W - 4 || y < 4 || y > H - 4) continue;
      px.push(x), py.push(y), pz.push(0);
    }
  }
  // Around each eye, a band above the upper lid (the skin a blink stretches) and
  // one below the lower lid, so the lids' motion stays near the eye (not the brows,
  // not the rims of glasses).
  const eyeSets = [[EYE_A_UPPER, EYE_A_LOWER], [EYE_B_UPPER, EYE_B_LOWER]];
  const lidBands: number[] = [];
  for (const [up, lo] of eyeSets) {
    const ux = up.map((i) => px[i]), uy = up.map((i) => py[i]);
    const lx = lo.map((i) => px[i]), ly = lo.map((i) => py[i]);
    const x0 = ux[0], x1 = ux[ux.length - 1];
    let gap = 1;
    for (let x = x0; x <= x1; x++) {
      gap = Math.max(gap, polylineY(lx, ly, x) - polylineY(ux, uy, x));
    }
    for (let k = 1; k < 6; k++) {
      const x = x0 + (x1 - x0) * k / 6;
      const yu = polylineY(ux, uy, x), yl = polylineY(lx, ly, x);
      for (
        const [y, side] of [[yu - 0.7 * gap, -1], [yu - 1.5 * gap, -2], [
          yl + 0.9 * gap,
          1,
        ]]
      ) {
        lidBands.push(px.length, side);
        px.push(x), py.push(y), pz.push(0);
      }
    }
  }
  for (let k = 0; k <= 8; k++) {
    const s = k * W / 8;
    px.push(s, s), py.push(-1, H + 1), pz.push(0, 0);
    if (k > 0 && k < 8) px.push(-1, W + 1), py.push(s, s), pz.push(0, 0);
  }
  const n = px.length;
  const sx = Float64Array.from(px), sy = Float64Array.from(py);

  // What follows the head: inside the head's ellipse (taller above, for hair and
  // hats) fully, fading out towards the shoulders and the background.
  const ovalR = (x: number, y: number) =>
    Math.hypot((x - fcx) / rx, (y - fcy) / ry);
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
  const iu = contourXY(LIP_INNER_UPPER, sx, sy),
    il = contourXY(LIP_INNER_LOWER, sx, sy);
  const ou = contourXY(LIP_OUTER_UPPER, sx, sy),
    ol = contourXY(LIP_OUTER_LOWER, sx, sy);
  const lipPoly = {
    x: [...ou.x, ...[...ol.x].reverse()],
    y: [...ou.y, ...[...ol.y].reverse()],
  };
  for (let i = 0; i < MESH_LANDMARKS; i++) {
    const x = sx[i], y = sy[i];
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
  const mouthX = (sx[61] + sx[291]) / 2, mouthY = (sy[61] + sy[291]) / 2;
  const mouthHw = (sx[291] - sx[61]) / 2;
  const split = {
    x: [sx[CHEEK_A], sx[61], sx[291], sx[CHEEK_B]],
    y: [sy[CHEEK_A], sy[61], sy[291], sy[CHEEK_B]],
  };
  const jawW = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    if (lip[i] !== LIP_NONE) {
      jawW[i] = lip[i] === LIP_LOWER ? 1 : 0;
      continue;
    }
    const side = Math.min(
      1,
      Math.max(
        0,
        (Math.abs(sx[i] - mouthX) - mouthHw) / Math.max(1, faceW / 2 - mouthHw),
      ),
    );
    const band = (0.035 + 0.13 * side) * faceH;
    jawW[i] = smoothstep(
      -0.4 * band,
      band,
      sy[i] - polylineY(split.x, split.y, sx[i]),
    );
    // Below the jaw the skin of the throat follows it part of the way, so the chin
    // slides over it instead of folding it.
    if (i >= MESH_LANDMARKS) {
      jawW[i] *= 0.85 * (1 - smoothstep(1, 2, ovalR(sx[i], sy[i])));
    }
  }
  for (const c of [61, 291, 78, 308]) jawW[c] = 0.5;

  // Topology from the face posed open (mouth apart, eyes wide), so the holes are
  // wide and the lips' and lids' contour edges come out as triangle edges.
  const ox = Float64Array.from(sx), oy = Float64Array.from(sy);
  const innerLips = new Set([...LIP_INNER_UPPER, ...LIP_INNER_LOWER]);
  for (let i = 0; i < MESH_LANDMARKS; i++) {
    oy[i] += jawW[i] * 0.12 * faceH - (lip[i] === LIP_UPPER ? 0.02 * faceH : 0);
    // Lip points lying on the inner contour (rounded landmarks do) step off it.
    if (lip[i] !== LIP_NONE && !innerLips.has(i)) {
      oy[i] += lip[i] === LIP_UPPER ? -2 : 2;
    }
  }
  for (const [up, lo] of eyeSets) {
    for (let k = 1; k < up.length - 1; k++) {
      oy[up[k]] -= 0.03 * faceH;
      oy[lo[k]] += 0.03 * faceH;
    }
  }
  for (let k = 0; k < lidBands.length; k += 2) {
    oy[lidBands[k]] += lidBands[k + 1] > 0 ? 0.03 * faceH : -0.03 * faceH;
  }
  const tris = meshWithHoles(ox, oy, eyeSets);

  const eyes = eyeSets.map(([up, lo]) => eyeRig(a, up, lo, sx, sy)) as [
    EyeRig,
    EyeRig,
  ];
  const cheekR = 0.05 * faceW;
  const cheek = (eye: number, corner: number, dir: number) => {
    const x = (sx[eye] + sx[corner]) / 2 + dir * 0.06 * faceW;
    const y = (sy[eye] + mouthY) / 2;
    return sampleTone(a, x - cheekR, y - cheekR, x + cheekR, y + cheekR);
  };
  const ca = cheek(145, 61, -1), cb = cheek(374, 291, 1);
  const inLips = (x: number, y: number) =>
    insidePolygon(lipPoly.x, lipPoly.y, x, y) &&
    (y < polylineY(iu.x, iu.y, x) - 0.5 || y > polylineY(il.x, il.y, x) + 0.5);
  return {
    avatarId: a.avatarId,
    width: W,
    height: H,
    n,
    sx,
    sy,
    z: Float64Array.from(pz),
    tris,
    headW,
    jawW,
    lip,
    lipD,
    lipGap,
    mouthX,
    mouthY,
    mouthHw,
    faceW,
    faceH,
    pivotY: (sy[CHEEK_A] + sy[CHEEK_B]) / 2,
    pivotZ: pz[CHIN] + 0.85 * faceH,
    neckX: sx[CHIN],
    neckY: sy[CHIN] + 0.25 * faceH,
    eyes,
    skin: { y: (ca.y + cb.y) / 2, u: (ca.u + cb.u) / 2, v: (ca.v + cb.v) / 2 },
    lipTone: sampleTone(
      a,
      sx[61],
      Math.min(...ou.y),
      sx[291],
      Math.max(...ol.y),
      inLips,
    ),
    light: Math.max(-1, Math.min(1, (cb.y - ca.y) / 40)),
    photoTeeth: photoTeeth(a.teeth, faceH, (ca.y + cb.y) / 2),
  };
}
