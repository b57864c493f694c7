/**
 * The portrait's mouth closed at upload (DECISIONS 12), its lips read by ./lips.ts
 * (their real inner edges, how far apart, teeth or a dark mouth between them): the
 * rest face with the lips closed and relaxed: upper and lower lip warped to meet
 * along one line, each stretched by its own texture over what showed between them, the
 * corners of a smile let down. What the lips covered is kept as the teeth layer, so
 * open visemes show the photo's own teeth.
 */
import { buildRig, LIP_NONE } from "../render/photo/rig.ts";
import { polylineY, smoothstep } from "../render/photo/geometry.ts";
import {
  CHIN,
  FOREHEAD,
  LIP_INNER_LOWER,
  LIP_INNER_UPPER,
  LIP_OUTER_LOWER,
  LIP_OUTER_UPPER,
} from "../render/photo/landmarks.ts";
import type { TeethLayer } from "../render/photo/types.ts";
import { inpaintI420 } from "./inpaint.ts";
import { clearSpikes } from "./seam.ts";
import { Warper } from "../render/photo/warp.ts";
import {
  CLOSED_SHARE,
  contour,
  inside,
  lipColour,
  type MouthReading,
  type Pixels,
  readMouth,
  refineInnerLips,
  type Tones,
  tonesOf,
  xOf,
  yOf,
  yuvAt,
} from "./lips.ts";

export type { MouthReading };

/**
 * Widest gap between the inner lips that is closed, as a share of the face's height:
 * lips parted over a row of teeth (a broad smile: the teeth are at least
 * `SMILE_TEETH` of what shows between them), other parted lips (a laugh, a mouth
 * that shows more of its inside than teeth), and a dropped jaw (a dark mouth, more
 * than `DARK_MOUTH` of the gap), which closing stretches the lower lip and chin over.
 */
export const MAX_SMILE_OPEN_SHARE = 0.13;
export const MAX_OPEN_SHARE = 0.095;
export const MAX_JAW_OPEN_SHARE = 0.06;
export const SMILE_TEETH = 0.5;
export const DARK_MOUTH = 0.35;
/** Below this share of the lip's colour (`lipColour`), a pixel by the seam is no lip. */
const GREY_LIP = 0.45;
/** ...nor below this share of the lip's luma. */
const SHADED_LIP = 0.8;
/** Half the height (px) of the dark line where closed lips meet. */
const SEAM_LINE = 1.2;

/** Whether a mouth read as `r` is too open to close at rest. */
export function tooOpen(r: MouthReading): boolean {
  if (r.dark > DARK_MOUTH) return r.open > MAX_JAW_OPEN_SHARE;
  return r.open >
    (r.teeth >= SMILE_TEETH ? MAX_SMILE_OPEN_SHARE : MAX_OPEN_SHARE);
}
/** The rest face: the mouth closed, its landmarks, and what the lips covered. */
export interface RestMouth {
  i420: Uint8Array;
  landmarks: Float32Array;
  teeth: TeethLayer | null;
  reading: MouthReading;
}

/**
 * The rest face of `p`: its inner lips refined, and when they are apart, closed and
 * relaxed by a warp (the photo otherwise unchanged); the teeth layer keeps what they
 * covered. A closed mouth comes back as it is, with no layer.
 */
export function restMouth(p: Pixels): RestMouth {
  const lm = new Float32Array(p.landmarks);
  if (!plausible(p, lm)) {
    return {
      i420: new Uint8Array(p.i420),
      landmarks: lm,
      teeth: null,
      reading: { open: 0, teeth: 0, dark: 0 },
    };
  }
  // How open: the wider of the mesh's gap and the refined one (the refining may
  // take a dark mouth's shaded lip edges for lip).
  const rawOpen = readMouth(p, lm).open;
  refineInnerLips(p, lm);
  const reading = readMouth(p, lm);
  reading.open = Math.max(reading.open, rawOpen);
  const faceH = yOf(lm, CHIN) - yOf(lm, FOREHEAD);
  if (reading.open < CLOSED_SHARE) {
    return {
      i420: new Uint8Array(p.i420),
      landmarks: lm,
      teeth: null,
      reading,
    };
  }
  const teeth = teethLayer(p, lm, faceH);
  const closed = closeLips(p, lm, faceH, tonesOf(p, lm), reading.dark);
  return { ...closed, teeth, reading };
}

/**
 * Whether the lips of `lm` lie inside the picture, below the forehead, with some
 * margin: a mesh the photo painter can draw (a stored avatar is checked again by it).
 */
function plausible(p: Pixels, lm: Float32Array): boolean {
  const faceH = yOf(lm, CHIN) - yOf(lm, FOREHEAD);
  if (!(faceH > 40) || !(faceH < p.height)) return false;
  return [...LIP_OUTER_UPPER, ...LIP_OUTER_LOWER].every((i) =>
    xOf(lm, i) > 0.1 * faceH && xOf(lm, i) < p.width - 0.1 * faceH &&
    yOf(lm, i) > yOf(lm, FOREHEAD) && yOf(lm, i) < p.height - 0.1 * faceH
  );
}

/** The photo's mouth before closing: a box around the lips, and the inner contours. */
function teethLayer(p: Pixels, lm: Float32Array, faceH: number): TeethLayer {
  const ou = contour(lm, LIP_OUTER_UPPER), ol = contour(lm, LIP_OUTER_LOWER);
  const m = 0.03 * faceH;
  const even = (v: number, max: number) =>
    Math.max(0, Math.min(max, 2 * Math.round(v / 2)));
  const x = even(Math.min(...ou.x) - m, p.width),
    y = even(Math.min(...ou.y) - m, p.height);
  const w = even(Math.max(...ou.x) + m, p.width) - x,
    h = even(Math.max(...ol.y) + m, p.height) - y;
  const W = p.width, n = W * p.height, cw = W >> 1;
  const out = new Uint8Array(w * h * 3 / 2);
  for (let r = 0; r < h; r++) {
    out.set(p.i420.subarray((y + r) * W + x, (y + r) * W + x + w), r * w);
  }
  for (let r = 0; r < h / 2; r++) {
    const s = ((y >> 1) + r) * cw + (x >> 1);
    out.set(p.i420.subarray(n + s, n + s + w / 2), w * h + r * (w / 2));
    out.set(
      p.i420.subarray(n * 5 / 4 + s, n * 5 / 4 + s + w / 2),
      w * h * 5 / 4 + r * (w / 2),
    );
  }
  const pairs = (idx: readonly number[]) =>
    Float32Array.from(idx.flatMap((i) => [xOf(lm, i), yOf(lm, i)]));
  return {
    x,
    y,
    w,
    h,
    i420: out,
    upper: pairs(LIP_INNER_UPPER),
    lower: pairs(LIP_INNER_LOWER),
  };
}

/**
 * The lips of `p` (inner contours `lm`, refined) warped shut: both inner contours
 * meet on one line, each lip stretched in proportion to its thickness (the skin beyond
 * following less and less, the chin rising with the jaw when the mouth was open), a
 * smile's corners brought down and in; a faint shadow where the lips meet.
 */
function closeLips(
  p: Pixels,
  lm: Float32Array,
  faceH: number,
  tones: Tones,
  dark: number,
): { i420: Uint8Array; landmarks: Float32Array } {
  const rig = buildRig({
    avatarId: "",
    tenantId: "",
    name: "",
    createdAt: 0,
    width: p.width,
    height: p.height,
    i420: p.i420,
    alpha: new Uint8Array(p.width * p.height),
    landmarks: lm,
  });
  const iu = contour(lm, LIP_INNER_UPPER), il = contour(lm, LIP_INNER_LOWER);
  const ou = contour(lm, LIP_OUTER_UPPER), ol = contour(lm, LIP_OUTER_LOWER);
  const mid = iu.x.length >> 1;
  const gMid = Math.max(0, il.y[mid] - iu.y[mid]);
  const tU = Math.max(2, iu.y[mid] - ou.y[mid]);
  const tL = Math.max(2, ol.y[mid] - il.y[mid]);
  // An open jaw (a dark mouth) closes mostly by rising; a smile's parted lips over
  // the teeth by both lips.
  const jaw = smoothstep(0.025, 0.06, gMid / faceH) *
    smoothstep(0.1, 0.4, dark);
  const share = tU / (tU + tL) * (1 - 0.5 * jaw);
  // Wide falloffs: each lip mostly moves, stretching little (a stretched lip's
  // edge turns into vertical streaks); the skin beyond takes the rest.
  const sigU = 1.2 * tU + 0.5 * share * gMid;
  const sigL = 1.2 * tL + 0.5 * (1 - share) * gMid;
  const { mouthX, mouthHw } = rig;
  // A smile: corners above the line the lips meet on. They come down most of the way
  // and in a little (the cheeks' skin with them).
  const meetMid = iu.y[mid] + share * gMid;
  const cornerY = (yOf(lm, 61) + yOf(lm, 291)) / 2;
  const smile = Math.max(0, meetMid - cornerY - 0.01 * faceH);
  const down = 0.7 * smile, inward = Math.min(0.08 * mouthHw, 0.5 * smile);
  const n = rig.n;
  const dx = new Float64Array(n), dy = new Float64Array(n);
  const innerU = new Set(LIP_INNER_UPPER), innerL = new Set(LIP_INNER_LOWER);
  for (let i = 0; i < n; i++) {
    const x = rig.sx[i], y = rig.sy[i];
    const yu = polylineY(iu.x, iu.y, x), yl = polylineY(il.x, il.y, x);
    const g = Math.max(0, yl - yu);
    const meet = yu + share * g;
    if (innerU.has(i) || innerL.has(i)) {
      dy[i] = meet - y;
    } else if (y <= meet) {
      // The lip moves whole (its thickness kept: one stretched over the teeth
      // looked swollen at rest and hung like a tongue when rounded open); the skin
      // beyond its outer edge takes the stretch.
      const d = Math.max(
        0,
        yu - y - Math.max(2, yu - polylineY(ou.x, ou.y, x)),
      );
      dy[i] = share * g * Math.exp(-((d / sigU) ** 2));
    } else {
      const d = Math.max(
        0,
        y - yl - Math.max(2, polylineY(ol.x, ol.y, x) - yl),
      );
      const lipPart = g * Math.exp(-((d / sigL) ** 2));
      // The chin rises with the jaw, the skin beside the mouth less and less.
      const side = Math.max(0, Math.abs(x - rig.mouthX) / rig.mouthHw - 1);
      const jawPart = rig.lip[i] === LIP_NONE
        ? jaw * gMid * Math.exp(-((side / 0.7) ** 2)) *
          (1 - smoothstep(yOf(lm, CHIN), yOf(lm, CHIN) + 0.1 * faceH, y))
        : 0;
      dy[i] = -(1 - share) * Math.max(lipPart, jawPart);
    }
    // The corners' relaxing: along the lips by the square of the distance from the
    // middle, around the corners on the cheeks fading with distance.
    const u = (x - mouthX) / mouthHw, v = (y - meetMid) / mouthHw;
    const e = Math.hypot(Math.max(0, Math.abs(u) - 1), v);
    const k = Math.min(1, u * u) * Math.exp(-((e / 0.45) ** 2));
    dy[i] += down * k;
    dx[i] -= Math.sign(u) * inward * k;
  }
  const out = new Uint8Array(p.i420);
  const warper = new Warper({
    width: p.width,
    height: p.height,
    y: p.i420.subarray(0, p.width * p.height),
    u: p.i420.subarray(p.width * p.height, p.width * p.height * 5 / 4),
    v: p.i420.subarray(p.width * p.height * 5 / 4),
    alpha: null,
    bg: null,
  });
  warper.begin(out, null);
  const d = [0, 0, 0, 0, 0, 0], s = [0, 0, 0, 0, 0, 0];
  // The two lips overlap by a pixel along the line they meet on: no seam of the
  // photo's teeth between them.
  const over = (i: number) => innerU.has(i) ? 0.6 : innerL.has(i) ? -0.6 : 0;
  const t = rig.tris;
  for (let k = 0; k < t.length; k += 3) {
    let movedAny = false;
    for (let j = 0; j < 3; j++) {
      const i = t[k + j];
      d[2 * j] = rig.sx[i] + dx[i];
      d[2 * j + 1] = rig.sy[i] + dy[i] + over(i);
      s[2 * j] = rig.sx[i];
      s[2 * j + 1] = rig.sy[i];
      if (Math.abs(dx[i]) > 0.01 || Math.abs(dy[i]) > 0.01) movedAny = true;
    }
    if (movedAny) warper.triangle(d, s);
  }
  const landmarks = new Float32Array(lm);
  for (let i = 0; i < 468; i++) {
    landmarks[i * 3] = rig.sx[i] + dx[i];
    landmarks[i * 3 + 1] = rig.sy[i] + dy[i];
  }
  cleanSeam(out, p.width, p.height, landmarks, tones, tU, tL);
  clearSpikes(out, p.width, p.height, landmarks, tU);
  lipLine(out, p.width, landmarks);
  return { i420: out, landmarks };
}

/**
 * What still shows of the mouth's inside near the line the lips now meet on (teeth or
 * dark pixels the mesh counted as lip, the dark corners of a smile), filled from the
 * lips around it (./inpaint.ts), luma and chroma.
 */
function cleanSeam(
  out: Uint8Array,
  w: number,
  h: number,
  lm: Float32Array,
  t: Tones,
  tU: number,
  tL: number,
): void {
  const p = { width: w, height: h, i420: out, landmarks: lm };
  const iu = contour(lm, LIP_INNER_UPPER);
  const ou = contour(lm, LIP_OUTER_UPPER), ol = contour(lm, LIP_OUTER_LOWER);
  const x0 = Math.ceil(ou.x[0] - 1), x1 = ou.x[ou.x.length - 1] + 1;
  const cx = (x0 + x1) / 2, hw = (x1 - x0) / 2;
  // The window of each column first, then what is bad in it, then one fill.
  const cols: Array<{ X: number; yc: number; r0: number; r1: number }> = [];
  for (let X = x0; X < x1; X++) {
    const yc = polylineY(iu.x, iu.y, X);
    // Near the seam; towards the corners, the lips whole (their outer contours).
    const c = smoothstep(0.55, 0.8, Math.abs(X - cx) / hw);
    const yo = polylineY(ou.x, ou.y, X), yb = polylineY(ol.x, ol.y, X);
    const top = yo - c +
      (1 - c) * Math.max(0, yc - Math.max(3, 0.5 * tU) - yo);
    const bottom = yb + c -
      (1 - c) * Math.max(0, yb - yc - Math.max(3, 0.5 * tL));
    const r0 = Math.max(1, Math.ceil(top)),
      r1 = Math.min(h - 2, Math.floor(bottom));
    if (r1 - r0 >= 2) cols.push({ X, yc, r0, r1 });
  }
  if (cols.length === 0) return;
  const by = Math.min(...cols.map((c) => c.r0)) & ~1;
  const box = {
    x: x0 & ~1,
    y: by,
    w: ((Math.ceil(x1) + 2) & ~1) - (x0 & ~1),
    h: ((Math.max(...cols.map((c) => c.r1)) + 2) & ~1) - by,
  };
  const mask = new Uint8Array(box.w * box.h);
  for (const { X, yc, r0, r1 } of cols) {
    // Brighter than the lip at both ends (a tooth's edge blended into the lip) or
    // much darker (the dark corner of a smile).
    const la = out[r0 * w + X], lb = out[r1 * w + X];
    const lit = Math.max(la, lb) + 6, shade = Math.min(la, lb) - 25;
    for (let r = r0 + 1; r < r1; r++) {
      const l = out[r * w + X];
      const upper = r + 0.5 < yc;
      const lip = upper ? t.upper : t.lip;
      // Or near the seam and without the lip's colour or light: grey (a shaded
      // tooth) or shadow (a smile's dark corner, which the closing warp stretches
      // into streaks); only a line as thin as the lips' own meeting stays dark.
      const off = Math.abs(r + 0.5 - yc);
      const near = off > SEAM_LINE &&
        off < Math.max(3, 0.5 * (upper ? tU : tL));
      if (
        l > lit || l < shade || inside(p, X, r, t, upper) ||
        (near &&
          (l < SHADED_LIP * lip[0] ||
            lipColour(yuvAt(p, X, r), lip) < GREY_LIP))
      ) mask[(r - box.y) * box.w + (X - box.x)] = 1;
    }
  }
  inpaintI420(out, w, h, box, mask);
}

/** A faint shadow along the line where the closed lips meet, fading at the corners. */
function lipLine(out: Uint8Array, w: number, lm: Float32Array): void {
  const iu = contour(lm, LIP_INNER_UPPER);
  const x0 = iu.x[0], x1 = iu.x[iu.x.length - 1];
  const cx = (x0 + x1) / 2, hw = Math.max(1, (x1 - x0) / 2);
  for (let X = Math.ceil(x0); X < x1; X++) {
    const yc = polylineY(iu.x, iu.y, X + 0.5);
    const u = (X + 0.5 - cx) / hw;
    const depth = 0.22 * (1 - u * u);
    for (let Y = Math.floor(yc - 2); Y <= yc + 2; Y++) {
      const i = Y * w + X;
      const k = 1 - depth * Math.exp(-(((Y + 0.5 - yc) / 0.9) ** 2));
      out[i] = 16 + (out[i] - 16) * k;
    }
  }
}
