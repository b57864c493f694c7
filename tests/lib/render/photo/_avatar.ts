/**
 * The photo avatars the photo-painter tests paint (prepared once per test process) and
 * measurements of its frames: the mouth's dark inside, the eyes' regions.
 */
import { preparePhoto } from "../../../../lib/photo/mod.ts";
import { resample } from "../../../../lib/photo/resample.ts";
import type { PhotoAvatar } from "../../../../lib/render/photo/types.ts";
import { fixture, fixtureBytes, png, rotate } from "../../photo/_helpers.ts";
import { createFrame, type Frame } from "../../../../lib/render/raster.ts";
import { type FaceState, restingFace } from "../../../../lib/render/face.ts";
import { blendShape } from "../../../../lib/render/mouth.ts";
import { VISEME_COUNT } from "../../../../lib/render/visemes.ts";
import type { Painter } from "../../../../lib/render/painter.ts";

export const AVATAR_ID = "ph_0123456789ABCDEFGHIJKLMNOP";
const prepared = new Map<string, Promise<PhotoAvatar>>();

function prepareOnce(
  key: string,
  avatarId: string,
  bytes: () => Uint8Array,
  name: string,
) {
  let p = prepared.get(key);
  if (!p) {
    p = preparePhoto(bytes(), {
      avatarId,
      tenantId: "acme",
      name,
      createdAt: 1,
    });
    prepared.set(key, p);
  }
  return p;
}

/** The test portrait (tests/fixtures/photo/grace_hopper.jpg), prepared once. */
export function testAvatar(): Promise<PhotoAvatar> {
  return prepareOnce(
    "hopper",
    AVATAR_ID,
    () => fixtureBytes("grace_hopper.jpg"),
    "Grace",
  );
}

/**
 * A smile that shows the teeth: the astronaut portrait (tests/fixtures/photo/), her
 * head and shoulders cut out and doubled (her face is too small as it is).
 */
export function smileAvatar(): Promise<PhotoAvatar> {
  return prepareOnce("astronaut", "ph_SMILE000000000000000000000", () => {
    const a = fixture("astronaut.png");
    const side = 256, rect = { x: 100, y: 0, w: side, h: side };
    const data = resample(
      a.data,
      a.width,
      a.height,
      3,
      rect,
      2 * side,
      2 * side,
    );
    return png({ width: 2 * side, height: 2 * side, data });
  }, "Eileen");
}

/** Landmark `i` of `a` as [x, y]. */
export function point(a: PhotoAvatar, i: number): [number, number] {
  return [a.landmarks[i * 3], a.landmarks[i * 3 + 1]];
}

/** A face at rest with viseme weights `w` (index → weight; the rest is `sil`). */
export function faceWith(
  w: Record<number, number>,
  more: Partial<FaceState> = {},
): { state: FaceState; weights: Float64Array } {
  const weights = new Float64Array(VISEME_COUNT);
  let sum = 0;
  for (const [k, v] of Object.entries(w)) (weights[Number(k)] = v, sum += v);
  weights[0] += Math.max(0, 1 - sum);
  const state = { ...restingFace(1), ...more };
  blendShape(weights, state.mouth);
  return { state, weights };
}

/** One frame of `p` painted for `state`. */
export function paintOnce(
  p: Painter,
  state: FaceState,
  weights: Float64Array,
): Frame {
  const f = createFrame(p.width, p.height);
  p.paint(f, state, weights);
  return f;
}

/** The box the mouth can open into: corners to chin, rest landmarks. */
export function mouthBox(a: PhotoAvatar) {
  const [x0] = point(a, 61), [x1] = point(a, 291);
  const top = Math.min(point(a, 0)[1], point(a, 37)[1], point(a, 267)[1]);
  const chin = point(a, 152)[1];
  return {
    x0: Math.floor(x0),
    x1: Math.ceil(x1),
    y0: Math.floor(top),
    y1: Math.ceil(chin),
  };
}

/**
 * How far apart the lips are (px): over the mouth's middle half, the mean longest
 * vertical run of pixels darker than half the lips' luma (the open mouth's inside; the
 * photo's lip line is a pixel or two). Found wherever the head has moved to.
 */
export function mouthGap(a: PhotoAvatar, luma: Uint8Array): number {
  const { x0, x1, y0, y1 } = mouthBox(a);
  const [, yu] = point(a, 13), [, yl] = point(a, 14);
  let lip = 0, n = 0;
  for (const [, y] of [point(a, 0), point(a, 17)]) {
    for (let x = x0 + 8; x < x1 - 8; x++) {
      for (const yy of [Math.round((y + yu) / 2), Math.round((y + yl) / 2)]) {
        lip += a.i420[yy * a.width + x];
        n++;
      }
    }
  }
  const dark = 16 + 0.5 * (lip / n - 16);
  const q = (x1 - x0) >> 2;
  // Down to halfway between the lower lip and the chin: the open mouth fits above,
  // the shadow under the chin stays out.
  const bottom = Math.round((yl + y1) / 2) + 4;
  let sum = 0;
  for (let x = x0 + q; x < x1 - q; x++) {
    let run = 0, best = 0;
    for (let y = y0 - 8; y < bottom; y++) {
      run = luma[y * a.width + x] < dark ? run + 1 : 0;
      if (run > best) best = run;
    }
    sum += best;
  }
  return sum / (x1 - x0 - 2 * q);
}

/** The test portrait turned 15° in the picture's plane (a tilted head), prepared once. */
export function tiltedAvatar(): Promise<PhotoAvatar> {
  return prepareOnce(
    "hopper-tilted",
    "ph_T1LTED0000000000000000000",
    () => png(rotate(fixture("grace_hopper.jpg"), 15)),
    "Grace tilted",
  );
}
