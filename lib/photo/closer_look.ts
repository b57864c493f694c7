/**
 * A second look at a found face: the face mesh run again on a square crop around it,
 * from the original photo, where the face fills the picture. Found in a whole photo, a
 * small face (a full-length shot, a face a tenth of the picture) can get a mesh that
 * sits a lip's height too low, its mouth on the chin; the close-up's mesh lies on the
 * photo's lips. On an ordinary portrait the two agree within a pixel or two, and the
 * first is kept.
 */
import type { RgbImage } from "./decode.ts";
import type { FoundFace, PhotoModels } from "./models.ts";
import { resample } from "./resample.ts";
import { CHIN, FOREHEAD } from "../render/photo/landmarks.ts";

/** The close-up's side (px) and its span over the face's larger extent. */
const CLOSE_SIDE = 512, CLOSE_SPAN = 2.2;
/** Farthest the close-up's face may lie from the first (share of the face's size). */
const SAME_FACE = 0.25;
/**
 * Farthest apart the two looks' mouths may be and agree (share of the face's height):
 * on ordinary portraits they are within 0.03; a mesh on the chin is 0.14 off.
 */
const AGREE = 0.05;
/** The mouth's corners, the lips' outer and inner middles. */
const MOUTH = [61, 291, 0, 17, 13, 14, 78, 308];

/** Centre and larger extent of a mesh's 468 face points. */
function extent(mesh: Float32Array) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < 468; i++) {
    const x = mesh[i * 3], y = mesh[i * 3 + 1];
    x0 = Math.min(x0, x), x1 = Math.max(x1, x);
    y0 = Math.min(y0, y), y1 = Math.max(y1, y);
  }
  return {
    cx: (x0 + x1) / 2,
    cy: (y0 + y1) / 2,
    size: Math.max(x1 - x0, y1 - y0),
  };
}

/**
 * `face` (found in `image` shrunk by `toOriginal`) as the close-up sees it, in the same
 * pixels; `face` itself when the close-up finds no single face where it was.
 */
export async function lookCloser(
  models: PhotoModels,
  image: RgbImage,
  face: FoundFace,
  toOriginal: number,
): Promise<FoundFace> {
  const first = extent(face.mesh);
  const side = CLOSE_SPAN * first.size * toOriginal;
  const rect = {
    x: first.cx * toOriginal - side / 2,
    y: first.cy * toOriginal - side / 2,
    w: side,
    h: side,
  };
  const data = resample(
    image.data,
    image.width,
    image.height,
    3,
    rect,
    CLOSE_SIDE,
    CLOSE_SIDE,
  );
  const found = await models.faces({
    width: CLOSE_SIDE,
    height: CLOSE_SIDE,
    data,
  });
  if (found.length !== 1) return face;
  // Back into the first look's pixels (depth scales with the picture).
  const k = side / CLOSE_SIDE / toOriginal;
  const ox = rect.x / toOriginal, oy = rect.y / toOriginal;
  const mesh = Float32Array.from(
    found[0].mesh,
    (v, i) => i % 3 === 0 ? ox + v * k : i % 3 === 1 ? oy + v * k : v * k,
  );
  const again = extent(mesh);
  const off = Math.hypot(again.cx - first.cx, again.cy - first.cy);
  if (off > SAME_FACE * first.size) return face;
  // Where the two agree on the mouth the first stands; where they do not, the
  // close-up's is the one on the photo's lips.
  const faceH = Math.hypot(
    face.mesh[FOREHEAD * 3] - face.mesh[CHIN * 3],
    face.mesh[FOREHEAD * 3 + 1] - face.mesh[CHIN * 3 + 1],
  );
  let moved = 0;
  for (const i of MOUTH) {
    moved = Math.max(
      moved,
      Math.hypot(
        mesh[i * 3] - face.mesh[i * 3],
        mesh[i * 3 + 1] - face.mesh[i * 3 + 1],
      ),
    );
  }
  if (moved <= AGREE * faceH) return face;
  // (The angles do not change with the picture's scale.)
  return { ...found[0], mesh };
}
