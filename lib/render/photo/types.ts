/**
 * A prepared photo avatar (DECISIONS 12), as the photo painter reads it: the portrait
 * cropped to head and shoulders in its framing, the face mesh found at upload, and the
 * person mask. `lib/photo/` prepares and stores it under its tenant; a media node loads
 * it once per session (cached per instance) and paints it.
 */

/** Side of the prepared portrait in the default (`square`) framing, in pixels. */
export const PHOTO_SIZE = 512;

/**
 * The framings a portrait is prepared in (DECISIONS 12), chosen at upload: the picture's
 * and so the stream's size.
 */
export const FRAMINGS = {
  square: { width: PHOTO_SIZE, height: PHOTO_SIZE },
  landscape: { width: 1280, height: 720 },
  portrait: { width: 720, height: 1280 },
} as const;
export type Framing = keyof typeof FRAMINGS;

/** Whether `s` names a framing. */
export function isFraming(s: string): s is Framing {
  return Object.hasOwn(FRAMINGS, s);
}

/** The framing of a `width`×`height` picture, or null when it is none of them. */
export function framingOf(width: number, height: number): Framing | null {
  for (const [name, size] of Object.entries(FRAMINGS)) {
    if (size.width === width && size.height === height) return name as Framing;
  }
  return null;
}

/** Face-mesh landmarks: MediaPipe's 468 points and its 10 iris points. */
export const LANDMARK_COUNT = 478;

export interface PhotoAvatar {
  /** `ph_` + 26 characters of `[0-9A-Z]`. */
  avatarId: string;
  tenantId: string;
  name: string;
  /** Epoch ms. */
  createdAt: number;
  /** One of `FRAMINGS`' sizes. */
  width: number;
  height: number;
  /**
   * The crop as one I420 frame (Y, then U, then V at half size each), BT.601 limited
   * range like lib/render/raster.ts.
   */
  i420: Uint8Array;
  /** Person segmentation of the crop, `width`×`height`: 0 background … 255 person. */
  alpha: Uint8Array;
  /**
   * `LANDMARK_COUNT` × (x, y, z) in crop pixels, MediaPipe's order and orientation
   * (z: depth relative to the face's centre, same scale as x, smaller towards the camera).
   */
  landmarks: Float32Array;
  /**
   * What the rest face's closed lips cover (lib/photo/mouth.ts): the photo's mouth as
   * it was, shown where a viseme opens the mouth. Absent or null: the photo's lips were
   * closed.
   */
  teeth?: TeethLayer | null;
}

/** The photo's mouth before preparation closed it, in crop pixels. */
export interface TeethLayer {
  /** The box kept (even x, y, w, h). */
  x: number;
  y: number;
  w: number;
  h: number;
  /** Its pixels as I420: Y (w×h), then U and V (w/2 × h/2). */
  i420: Uint8Array;
  /**
   * The photo's inner lip contours there (LIP_INNER_UPPER's and LIP_INNER_LOWER's
   * points, corner to corner), as x, y pairs: the teeth showed between them.
   */
  upper: Float32Array;
  lower: Float32Array;
}
