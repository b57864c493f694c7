/**
 * A portrait turned into a `PhotoAvatar` (DECISIONS 12): decoded, checked (one face,
 * wide enough, roughly frontal), cropped to head and shoulders around the face in its
 * framing (512×512, 1280×720 or 720×1280), converted to I420, with the face mesh (a
 * second look, ./closer_look.ts) and the person mask expressed in the crop's pixels; its
 * mouth closed for the rest face (./mouth.ts).
 */
import { toYuv } from "../render/raster.ts";
import {
  type Framing,
  FRAMINGS,
  LANDMARK_COUNT,
  type PhotoAvatar,
} from "../render/photo/types.ts";
import { decodePhoto, type RgbImage } from "./decode.ts";
import { refineMatte } from "./matte.ts";
import { lookCloser } from "./closer_look.ts";
import type { FoundFace, PhotoModels } from "./models.ts";
import { restMouth, tooOpen } from "./mouth.ts";
import { PhotoRefusal } from "./refusal.ts";
import { type Rect, resample } from "./resample.ts";

/** Narrowest accepted face, in the original photo's pixels. */
export const MIN_FACE_WIDTH = 160;
/**
 * Head rotation accepted, true degrees (from the mesh's depth): turned (yaw) or
 * raised and lowered (pitch), and tilted (roll). Past these a portrait is refused.
 */
export const MAX_YAW_DEG = 30;
export const MAX_PITCH_DEG = 25;
export const MAX_ROLL_DEG = 20;
/** Longest side the models see; larger photos are shrunk for them (the crop is not). */
const MODEL_MAX_SIDE = 1024;
/** Crop side over face width: head, hair and shoulders, with room for the sway. */
const CROP_PER_FACE = 2.4;
/** Tightest crop taken to stay inside the photo rather than repeat its edge. */
const MIN_CROP_PER_FACE = 1.8;
/** Where the face's centre sits, from the crop's top, as a share of its side. */
const FACE_CENTRE_Y = 0.5;
/**
 * Landscape and portrait: the face (the mesh's height, brow to chin) about a third of
 * the frame's height, up to `MAX_FACE_SHARE` where the photo has no more room; its
 * centre `WIDE_FACE_Y` of the height from the top, and where the crop is moved to stay
 * inside the photo, still at least `SIDE_ROOM` of the width from either side and
 * between `FACE_TOP` and `FACE_BOTTOM` of the height.
 */
const FACE_SHARE = 1 / 3;
const MAX_FACE_SHARE = 0.45;
const WIDE_FACE_Y = 0.42;
const SIDE_ROOM = 0.25;
const FACE_TOP = 0.3;
const FACE_BOTTOM = 0.6;

export interface PhotoMeta {
  avatarId: string;
  tenantId: string;
  name: string;
  /** Epoch ms. */
  createdAt: number;
  /** The picture's framing; `square` when absent. */
  framing?: Framing;
}

/**
 * Decodes, checks and prepares a portrait with `models`, here on the calling thread:
 * lib/photo/prepare_worker.ts runs it off the event loop (`preparePhoto`,
 * lib/photo/worker.ts). Rejects with `PhotoRefusal` naming the cause.
 */
export async function preparePhotoWith(
  models: PhotoModels,
  bytes: Uint8Array,
  meta: PhotoMeta,
): Promise<PhotoAvatar> {
  const image = decodePhoto(bytes);
  const scale = Math.min(
    1,
    MODEL_MAX_SIDE / Math.max(image.width, image.height),
  );
  const small = scale < 1
    ? shrink(
      image,
      Math.round(image.width * scale),
      Math.round(image.height * scale),
    )
    : image;
  const faces = await models.faces(small);
  if (faces.length === 0) throw new PhotoRefusal("no face found");
  if (faces.length > 1) throw new PhotoRefusal("more than one face");
  const toOriginal = image.width / small.width;
  const face = await lookCloser(models, image, faces[0], toOriginal);
  checkFace(face, toOriginal);
  const mask = await models.segment(small);
  const framing = meta.framing ?? "square";
  const { width: W, height: H } = FRAMINGS[framing];
  const rect = cropRect(
    face.mesh,
    toOriginal,
    image.width,
    image.height,
    framing,
  );
  const rgb = resample(image.data, image.width, image.height, 3, rect, W, H);
  const smallRect = {
    x: rect.x / toOriginal,
    y: rect.y / toOriginal,
    w: rect.w / toOriginal,
    h: rect.h / toOriginal,
  };
  const alpha = resample(
    mask,
    small.width,
    small.height,
    1,
    smallRect,
    W,
    H,
  );
  const crop = {
    width: W,
    height: H,
    i420: rgbToI420(rgb, W, H),
    landmarks: cropLandmarks(face.mesh, toOriginal, rect, W),
  };
  // The rest face talks from a closed mouth: one opened too wide to close is refused.
  const mouth = restMouth(crop);
  if (tooOpen(mouth.reading)) {
    throw new PhotoRefusal("mouth open too wide");
  }
  const { framing: _, ...rest } = meta;
  return {
    ...rest,
    ...crop,
    i420: mouth.i420,
    alpha: refineMatte(rgb, alpha, W, H, crop.landmarks),
    landmarks: mouth.landmarks,
    teeth: mouth.teeth,
  };
}

function shrink(image: RgbImage, width: number, height: number): RgbImage {
  const all = { x: 0, y: 0, w: image.width, h: image.height };
  return {
    width,
    height,
    data: resample(
      image.data,
      image.width,
      image.height,
      3,
      all,
      width,
      height,
    ),
  };
}

/** Extent of the 468 mesh points (not the iris), in the mesh's pixels. */
function meshBox(mesh: Float32Array) {
  let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
  for (let i = 0; i < 468; i++) {
    const x = mesh[i * 3], y = mesh[i * 3 + 1];
    minX = Math.min(minX, x);
    maxX = Math.max(maxX, x);
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
  }
  return { minX, maxX, minY, maxY };
}

/** Refuses a face narrower than `MIN_FACE_WIDTH` in the original, or turned or tilted too far. */
export function checkFace(face: FoundFace, toOriginal: number): void {
  const box = meshBox(face.mesh);
  if ((box.maxX - box.minX) * toOriginal < MIN_FACE_WIDTH) {
    throw new PhotoRefusal("face too small");
  }
  const deg = (r: number) => Math.abs(r) * 180 / Math.PI;
  if (deg(face.yaw) > MAX_YAW_DEG || deg(face.pitch) > MAX_PITCH_DEG) {
    throw new PhotoRefusal("head turned too far");
  }
  if (deg(face.roll) > MAX_ROLL_DEG) {
    throw new PhotoRefusal("head tilted too far");
  }
}

/**
 * The crop in original pixels. Square: `CROP_PER_FACE` face widths, the face centred
 * across and at `FACE_CENTRE_Y` down; narrowed (to `MIN_CROP_PER_FACE` at most) and
 * moved up or down to stay inside the photo where it can. Landscape and portrait:
 * `wideCrop`.
 */
export function cropRect(
  mesh: Float32Array,
  toOriginal: number,
  width: number,
  height: number,
  framing: Framing = "square",
): Rect {
  if (framing !== "square") {
    return wideCrop(mesh, toOriginal, width, height, framing);
  }
  const box = meshBox(mesh);
  const faceW = (box.maxX - box.minX) * toOriginal;
  const cx = (box.minX + box.maxX) / 2 * toOriginal;
  const cy = (box.minY + box.maxY) / 2 * toOriginal;
  const fits = Math.min(2 * cx, 2 * (width - cx), height);
  const side = Math.max(
    faceW * MIN_CROP_PER_FACE,
    Math.min(faceW * CROP_PER_FACE, fits),
  );
  let y = cy - side * FACE_CENTRE_Y;
  if (side <= height) y = Math.min(Math.max(0, y), height - side);
  return { x: cx - side / 2, y, w: side, h: side };
}

/**
 * A landscape or portrait crop, inside the photo (its own surroundings, nothing
 * invented): the largest up to the face being `FACE_SHARE` of its height that keeps the
 * face's centre `SIDE_ROOM` of the width off either side and between `FACE_TOP` and
 * `FACE_BOTTOM` of the height, the face at `WIDE_FACE_Y` down where the photo allows.
 * Refused when the face must be more than `MAX_FACE_SHARE` of it for that: the photo
 * has not enough room around the face for the framing.
 */
function wideCrop(
  mesh: Float32Array,
  toOriginal: number,
  width: number,
  height: number,
  framing: Exclude<Framing, "square">,
): Rect {
  const { width: W, height: H } = FRAMINGS[framing];
  const aspect = W / H;
  const box = meshBox(mesh);
  const faceH = (box.maxY - box.minY) * toOriginal;
  const cx = (box.minX + box.maxX) / 2 * toOriginal;
  const cy = (box.minY + box.maxY) / 2 * toOriginal;
  const h = Math.min(
    faceH / FACE_SHARE,
    height,
    width / aspect,
    Math.min(cx, width - cx) / (SIDE_ROOM * aspect),
    cy / FACE_TOP,
    (height - cy) / (1 - FACE_BOTTOM),
  );
  if (!(faceH / h <= MAX_FACE_SHARE)) {
    throw new PhotoRefusal(`not enough room around the face for ${framing}`);
  }
  const w = h * aspect;
  return {
    x: Math.min(Math.max(0, cx - w / 2), width - w),
    y: Math.min(Math.max(0, cy - WIDE_FACE_Y * h), height - h),
    w,
    h,
  };
}

/**
 * The mesh in crop pixels, in MediaPipe's order: Human lists the left eye's iris
 * (468–472) before the right's; MediaPipe puts the right's (beside points 33 and 133)
 * first.
 */
function cropLandmarks(
  mesh: Float32Array,
  toOriginal: number,
  rect: Rect,
  width: number,
): Float32Array {
  // (One scale: the crop has its picture's proportions.)
  const s = width / rect.w, k = toOriginal * s;
  const out = new Float32Array(LANDMARK_COUNT * 3);
  for (let i = 0; i < LANDMARK_COUNT; i++) {
    out[i * 3] = mesh[i * 3] * k - rect.x * s;
    out[i * 3 + 1] = mesh[i * 3 + 1] * k - rect.y * s;
    out[i * 3 + 2] = mesh[i * 3 + 2] * k;
  }
  const rightEyeX = (out[33 * 3] + out[133 * 3]) / 2;
  const leftEyeX = (out[263 * 3] + out[362 * 3]) / 2;
  const first = out[468 * 3];
  if (Math.abs(first - leftEyeX) < Math.abs(first - rightEyeX)) {
    const a = out.slice(468 * 3, 473 * 3);
    out.copyWithin(468 * 3, 473 * 3, 478 * 3);
    out.set(a, 473 * 3);
  }
  return out;
}

/** RGB to one I420 frame, BT.601 limited range as lib/render/raster.ts's `toYuv`. */
export function rgbToI420(
  rgb: Uint8Array,
  width: number,
  height: number,
): Uint8Array {
  const out = new Uint8Array(width * height * 3 / 2);
  const cw = width >> 1;
  const uOff = width * height;
  const vOff = uOff + cw * (height >> 1);
  const byte = (v: number) => Math.min(255, Math.max(0, Math.round(v)));
  for (let i = 0; i < width * height; i++) {
    out[i] = byte(toYuv([rgb[i * 3], rgb[i * 3 + 1], rgb[i * 3 + 2]]).y);
  }
  for (let y = 0; y < height >> 1; y++) {
    for (let x = 0; x < cw; x++) {
      let r = 0, g = 0, b = 0;
      for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
        const s = ((2 * y + dy) * width + 2 * x + dx) * 3;
        r += rgb[s];
        g += rgb[s + 1];
        b += rgb[s + 2];
      }
      const c = toYuv([r / 4, g / 4, b / 4]);
      out[uOff + y * cw + x] = byte(c.u);
      out[vOff + y * cw + x] = byte(c.v);
    }
  }
  return out;
}
