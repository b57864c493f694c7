/**
 * The photo painter (DECISIONS 12): a tenant's portrait, warped frame by frame through
 * its face mesh (./pose.ts, ./warp.ts) by the face state the built-in session drives
 * from the voice, with the mouth's inside and the eyes drawn in (./interior.ts), over
 * the photo's own background, a catalog background, or transparent black with the
 * warped person alpha (DECISIONS 6); over another background the person's edge is
 * recoloured from the person (./decontaminate.ts).
 */
import type { BackgroundDef } from "../../avatars.ts";
import { findBackground, PHOTO_OWN_BG } from "../../avatars.ts";
import type { FaceState } from "../face.ts";
import type { Painter, PainterSource, ThreadPainter } from "../painter.ts";
import { RenderStartError } from "../../ports/render.ts";
import { backgroundPlanes, createFrame, type Frame } from "../raster.ts";
import { decontaminate } from "./decontaminate.ts";
import { drawEyes } from "./eyes.ts";
import { drawMouth } from "./interior.ts";
import { validLandmarks } from "./landmarks.ts";
import { createPose, posePoints } from "./pose.ts";
import { buildRig, type Rig } from "./rig.ts";
import { framingOf, type PhotoAvatar } from "./types.ts";
import { Warper, type WarpSource } from "./warp.ts";

export interface PhotoPainterOptions {
  /** A catalog background, `"transparent"` (DECISIONS 6), or null: the photo's own. */
  bg: BackgroundDef | "transparent" | null;
  /** Seeds the breathing's phase. */
  seed?: number;
}

/** A vertex that moved less than this (px) since rest leaves its triangles alone. */
const STILL = 0.02;

/**
 * The rigs, one per avatar (its id with its tenant and creation time, and a digest of
 * its landmarks: a stored photo never changes under its id, but two pictures given one
 * id, as an evaluation run or a test may, must not share a rig), the most recently
 * used last.
 */
const rigs = new Map<string, Rig>();
const RIG_CACHE_MAX = 64;

/** FNV-1a over the landmarks' bits. */
function landmarkDigest(lm: Float32Array): number {
  const bits = new Uint32Array(lm.buffer, lm.byteOffset, lm.length);
  let h = 0x811c9dc5;
  for (let i = 0; i < bits.length; i++) h = Math.imul(h ^ bits[i], 0x01000193);
  return h >>> 0;
}

/** The rig of `avatar`, built once and kept. */
export function rigOf(avatar: PhotoAvatar): Rig {
  const key =
    `${avatar.tenantId}\u0000${avatar.avatarId}\u0000${avatar.createdAt}\u0000${
      landmarkDigest(avatar.landmarks)
    }`;
  const hit = rigs.get(key);
  if (hit) {
    rigs.delete(key);
    rigs.set(key, hit);
    return hit;
  }
  const rig = buildRig(avatar);
  rigs.set(key, rig);
  if (rigs.size > RIG_CACHE_MAX) rigs.delete(rigs.keys().next().value!);
  return rig;
}

/** Checks that `avatar` is something the painter can draw. */
function checkAvatar(a: PhotoAvatar): void {
  const n = a.width * a.height;
  if (
    framingOf(a.width, a.height) === null ||
    a.i420.length !== n * 3 / 2 || a.alpha.length !== n ||
    !validLandmarks(a.landmarks)
  ) throw new RangeError("not a prepared photo avatar");
}

/** Paints `avatar`, live: see the module's doc. */
export function createPhotoPainter(
  avatar: PhotoAvatar,
  opts: PhotoPainterOptions,
): Painter {
  checkAvatar(avatar);
  const rig = rigOf(avatar);
  const w = avatar.width, h = avatar.height, n = w * h;
  const replaced = opts.bg !== null;
  // Over another background the person's edge takes the person's colours, not the
  // old background's mixed into them (no fringe).
  const photo = replaced
    ? decontaminate(avatar.i420, avatar.alpha, w, h)
    : avatar.i420;
  const bgPlanes = opts.bg === null
    ? null
    : opts.bg === "transparent"
    ? createFrame(w, h).data
    : backgroundPlanes(opts.bg, w, h);
  const src: WarpSource = {
    width: w,
    height: h,
    y: photo.subarray(0, n),
    u: photo.subarray(n, n * 5 / 4),
    v: photo.subarray(n * 5 / 4),
    alpha: replaced ? avatar.alpha : null,
    bg: bgPlanes,
  };
  // The rest frame: the photo, over the background when it is replaced.
  const rest = new Uint8Array(photo);
  if (bgPlanes) {
    const a = avatar.alpha;
    for (let i = 0; i < n; i++) {
      rest[i] = (photo[i] * a[i] + bgPlanes[i] * (255 - a[i])) / 255 + 0.5;
    }
    const cw = w >> 1;
    for (let i = n; i < rest.length; i++) {
      const c = (i - n) % (n / 4);
      const ai = ((c / cw | 0) * 2 + 1) * w + (c % cw) * 2 + 1;
      rest[i] = (photo[i] * a[ai] + bgPlanes[i] * (255 - a[ai])) / 255 + 0.5;
    }
  }
  const alphaOut = opts.bg === "transparent"
    ? new Uint8Array(avatar.alpha)
    : null;
  const warper = new Warper(src);
  const pose = createPose(rig);
  const scratch = { p: new Float64Array(2) };
  const d = [0, 0, 0, 0, 0, 0], s = [0, 0, 0, 0, 0, 0];
  const phase = ((opts.seed ?? 0) * 0.6180339887) % 1 * Math.PI * 2;
  const moved = new Uint8Array(rig.n);
  let live = 0;

  return {
    width: w,
    height: h,
    paint(f: Frame, state: FaceState, weights: Float64Array): void {
      if (f.width !== w || f.height !== h) throw new RangeError("frame size");
      const out = f.data;
      out.set(rest);
      if (alphaOut) alphaOut.set(avatar.alpha);
      // Breathing: ~15 breaths a minute, a pixel or two at the shoulders (whole pixels).
      const breath = Math.round(
        1.5 * Math.sin(state.t * Math.PI * 2 / 4.2 + phase),
      );
      // Speech under way (the viseme weights away from silence), slow to rise and to
      // fall, so the sway grows and settles over about a second.
      const speaking = 1 - weights[0];
      live += (speaking - live) * (speaking > live ? 0.08 : 0.06);
      posePoints(rig, state, breath, live, pose);
      for (let i = 0; i < rig.n; i++) {
        moved[i] = Math.abs(pose.x[i] - rig.sx[i]) > STILL ||
            Math.abs(pose.y[i] - rig.sy[i]) > STILL
          ? 1
          : 0;
      }
      warper.begin(out, alphaOut);
      const t = rig.tris;
      for (let k = 0; k < t.length; k += 3) {
        const a = t[k], b = t[k + 1], c = t[k + 2];
        if (!moved[a] && !moved[b] && !moved[c]) continue;
        d[0] = pose.x[a], d[1] = pose.y[a], d[2] = pose.x[b], d[3] = pose.y[b];
        d[4] = pose.x[c], d[5] = pose.y[c];
        s[0] = rig.sx[a], s[1] = rig.sy[a], s[2] = rig.sx[b], s[3] = rig.sy[b];
        s[4] = rig.sx[c], s[5] = rig.sy[c];
        warper.triangle(d, s);
      }
      drawEyes(rig, pose, state, src, out, scratch);
      drawMouth(rig, pose, state, src, out, scratch);
    },
    paintAlpha: alphaOut
      ? (alpha: Uint8Array) => alpha.set(alphaOut)
      : undefined,
  };
}

/** Whether `id` names a photo avatar (DECISIONS 12). */
export function isPhotoAvatarId(id: string): boolean {
  return /^ph_[0-9A-Z]{26}$/.test(id);
}

/**
 * The background a session asked for, as the painter takes it: "transparent", null for
 * the photo's own (none named, or named), a catalog background, or undefined when the
 * catalog has no such background.
 */
function photoBackground(
  bgId: string,
): BackgroundDef | "transparent" | null | undefined {
  return bgId === "transparent"
    ? "transparent"
    : bgId === "" || bgId === PHOTO_OWN_BG
    ? null
    : findBackground(bgId);
}

/**
 * The painter of `avatar` on the background `bgId` names; throws RangeError when the
 * background is unknown or the avatar cannot be painted.
 */
export function openPhotoPainter(
  avatar: PhotoAvatar,
  bgId: string,
  seed: number,
): Painter {
  const bg = photoBackground(bgId);
  if (bg === undefined) throw new RangeError("unknown background");
  return createPhotoPainter(avatar, { bg, seed });
}

/** Opens a photo avatar's painter on another thread (./paint_pool/). */
export type ThreadPainters = (
  avatar: PhotoAvatar,
  bgId: string,
  seed: number,
) => Promise<ThreadPainter | null>;

/**
 * The photo avatars as a painter source for the built-in renderer: ids that are not
 * photo avatars are not its own (undefined); one that `load` cannot find under the
 * session's tenant is misconfigured. With `threads` (the paint pool), each is painted
 * on the pool's threads; where it has none, on the caller's.
 */
export function photoPainters(
  load: (tenantId: string, avatarId: string) => Promise<PhotoAvatar | null>,
  threads?: ThreadPainters,
): PainterSource {
  return async (o) => {
    if (!o.avatarId.startsWith("ph_")) return undefined;
    const avatar = o.tenantId && isPhotoAvatarId(o.avatarId)
      ? await load(o.tenantId, o.avatarId)
      : null;
    if (!avatar) {
      throw new RenderStartError("misconfigured", "unknown photo avatar");
    }
    if (photoBackground(o.bgId) === undefined) {
      throw new RenderStartError("misconfigured", "unknown background");
    }
    const seed = seedOf(o.sessionId);
    try {
      return await threads?.(avatar, o.bgId, seed) ??
        openPhotoPainter(avatar, o.bgId, seed);
    } catch {
      throw new RenderStartError(
        "misconfigured",
        "the photo avatar cannot be painted",
      );
    }
  };
}

/** A stable seed from a session id (FNV-1a). */
function seedOf(id: string): number {
  let hsh = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hsh = Math.imul(hsh ^ id.charCodeAt(i), 0x01000193);
  }
  return hsh >>> 0;
}
