/**
 * The viseme sheet: the portrait painted at rest, at each viseme at full weight, and
 * blinking (the lid fully down), each frame measured with the face mesh run on its
 * pixels.
 */
import type { FoundFace } from "../../lib/photo/models.ts";
import { type FaceState, restingFace } from "../../lib/render/face.ts";
import { blendShape } from "../../lib/render/mouth.ts";
import type { Painter } from "../../lib/render/painter.ts";
import { createFrame } from "../../lib/render/raster.ts";
import { VISEME_COUNT, VISEMES } from "../../lib/render/visemes.ts";
import { type RgbFrame, teethPercent } from "./measure.ts";
import { i420ToRgb } from "./picture.ts";

/** One painted frame of the sheet. */
export interface SheetTile {
  label: string;
  rgb: RgbFrame;
  face: FoundFace | null;
  /** Teeth-like pixels inside the outer lips (%); NaN without a face. */
  teeth: number;
}

/** A face at rest (t = 1 s) with viseme `v` at full weight and the lids at `blink`. */
export function faceAt(
  v: number,
  blink = 0,
): { state: FaceState; weights: Float64Array } {
  const weights = new Float64Array(VISEME_COUNT);
  weights[v] = 1;
  const state = { ...restingFace(1), blink };
  blendShape(weights, state.mouth);
  return { state, weights };
}

/**
 * Paints and measures the sheet: rest, the 14 visemes after `sil`, and a blink, each
 * by a fresh painter from `make` (a painter's sway follows the frames it painted).
 */
export async function paintSheet(
  make: () => Painter,
  meshOf: (f: RgbFrame) => Promise<FoundFace | null>,
): Promise<SheetTile[]> {
  const jobs: Array<[string, number, number]> = [["rest", 0, 0]];
  for (let v = 1; v < VISEME_COUNT; v++) jobs.push([VISEMES[v], v, 0]);
  jobs.push(["blink", 0, 1]);
  const out: SheetTile[] = [];
  for (const [label, v, blink] of jobs) {
    const { state, weights } = faceAt(v, blink);
    const painter = make();
    const f = createFrame(painter.width, painter.height);
    painter.paint(f, state, weights);
    const rgb = i420ToRgb(f.data, f.width, f.height);
    const face = await meshOf(rgb);
    out.push({
      label,
      rgb,
      face,
      teeth: face ? teethPercent(rgb, face.mesh) : NaN,
    });
  }
  return out;
}
