/**
 * The photo's own gap between its lips, carried with the head: the mesh leaves the
 * mouth a hole, and a closed mouth's hole is the photo's lip line. Once the head has
 * moved, the rest frame under that hole is no longer the head's: it is filled from
 * the photo through the head's motion undone, before the mouth's inside is drawn over
 * what opens (./interior.ts).
 */
import { LIP_INNER_LOWER, LIP_INNER_UPPER } from "./landmarks.ts";
import { fillLens, type Line } from "./lens.ts";
import { unhead } from "./pose.ts";
import type { DrawInterior } from "./lens.ts";
import { bilinear } from "./warp.ts";

/** The inner lips' posed contours, reused frame to frame. */
const lines = new WeakMap<object, { up: Line; lo: Line }>();

/** Fills the hole between the posed inner lips from the photo, when the head moved. */
export const drawLipGap: DrawInterior = (
  rig,
  pose,
  _state,
  src,
  out,
  scratch,
) => {
  const a = pose.aff;
  if (
    a[0] === 1 && a[1] === 0 && a[2] === 0 && a[3] === 0 && a[4] === 1 &&
    a[5] === 0
  ) {
    return;
  }
  let l = lines.get(pose);
  if (!l) {
    l = {
      up: {
        x: new Float64Array(LIP_INNER_UPPER.length),
        y: new Float64Array(LIP_INNER_UPPER.length),
      },
      lo: {
        x: new Float64Array(LIP_INNER_LOWER.length),
        y: new Float64Array(LIP_INNER_LOWER.length),
      },
    };
    lines.set(pose, l);
  }
  LIP_INNER_UPPER.forEach((
    i,
    k,
  ) => (l.up.x[k] = pose.x[i], l.up.y[k] = pose.y[i]));
  LIP_INNER_LOWER.forEach((
    i,
    k,
  ) => (l.lo.x[k] = pose.x[i], l.lo.y[k] = pose.y[i]));
  const w = rig.width, h = rig.height, cw = w >> 1, ch = h >> 1, p = scratch.p;
  fillLens(out, w, h, l.up, l.lo, (X, Y, px) => {
    unhead(pose, rig, X, Y, p);
    px.y = bilinear(src.y, w, h, p[0] - 0.5, p[1] - 0.5);
    px.u = bilinear(src.u, cw, ch, p[0] / 2 - 0.5, p[1] / 2 - 0.5);
    px.v = bilinear(src.v, cw, ch, p[0] / 2 - 0.5, p[1] / 2 - 0.5);
  });
};
