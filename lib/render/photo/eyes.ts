/**
 * The eyes behind the moving lids: the eyeball from the photo, shaded under a
 * lowering lid, the iris moved by the gaze within the photo's own opening.
 */
import { polylineY, smoothstep } from "./geometry.ts";
import { type DrawArgs, type DrawInterior, fillLens, line } from "./lens.ts";
import { unhead } from "./pose.ts";
import { riseAt } from "./regions.ts";
import type { EyeRig, Rig } from "./rig.ts";
import { bilinear } from "./warp.ts";

/** Draws both eyes between their moved lids, the irises turned by the gaze. */
export const drawEyes: DrawInterior = (rig, pose, state, src, out, scratch) => {
  for (const e of rig.eyes) drawEye(rig, e, pose, state, src, out, scratch);
};

/**
 * Where a look of `off` (px) takes the point at `d` along a line whose knots are the
 * eye's two edges `e0`, `e1` and the iris's `i0`, `i1`: the iris moves whole, the
 * white on either side stretches or gathers (no ghost of the iris, no flat fill). The
 * inverse map: the photo's coordinate shown at `d`.
 */
function unlook(
  d: number,
  e0: number,
  i0: number,
  i1: number,
  e1: number,
  off: number,
): number {
  // Knots in the frame: the edges stay, the iris shifts (kept inside the edges).
  const a = Math.max(e0 + 0.5, Math.min(e1 - 0.5, i0 + off));
  const b = Math.max(a, Math.min(e1 - 0.5, i1 + off));
  if (d <= e0 || d >= e1) return d;
  if (d < a) return e0 + (d - e0) * (i0 - e0) / Math.max(1e-6, a - e0);
  if (d <= b) return i0 + (d - a) * (i1 - i0) / Math.max(1e-6, b - a);
  return i1 + (d - b) * (e1 - i1) / Math.max(1e-6, e1 - b);
}

function drawEye(
  rig: Rig,
  e: EyeRig,
  ...[pose, state, src, out, scratch]: DrawArgs
): void {
  const up = line(e.upper, pose.x, pose.y), lo = line(e.lower, pose.x, pose.y);
  const rUp = line(e.upper, rig.sx, rig.sy),
    rLo = line(e.lower, rig.sx, rig.sy);
  const r = e.irisR;
  const ox = state.gaze.x * 0.5 * r, oy = state.gaze.y * 0.25 * r;
  const x0 = rUp.x[0], x1 = rUp.x[rUp.x.length - 1];
  const w = rig.width, h = rig.height, cw = w >> 1, ch = h >> 1;
  const p = scratch.p;
  // Closing, the lid covers the eye: its own skin (the photo's, above the upper lid)
  // stretched down over the opening, the lashes along its lower edge; none of the
  // iris shows through. Only as it shuts: half closed, the moving lid is opaque over
  // the eye's upper half and the lower half is the photo's eye (faded in from 0.3, a
  // translucent lid ghosted the iris through it).
  const cover = smoothstep(0.6, 0.95, state.blink);
  fillLens(out, w, h, up, lo, (X, Y, px) => {
    unhead(pose, rig, X, Y, p);
    let hx = p[0], hy = p[1];
    const yu = polylineY(up.x, up.y, X);
    // A lowering lid shades the eye under it (the photo has its own shade at rest).
    const lid = 1 -
      0.3 * state.blink * Math.exp(-(Y - yu) / (0.15 * e.gap + 0.5));
    if (ox !== 0 || oy !== 0) {
      // The eyeball turns: the iris slides, the white gives, within the photo's own
      // opening (what the lids hid is not in the photo).
      hx = unlook(hx, x0, e.irisX - r, e.irisX + r, x1, ox);
      const ru = polylineY(rUp.x, rUp.y, hx), rl = polylineY(rLo.x, rLo.y, hx);
      hy = unlook(hy, ru, e.irisY - r, e.irisY + r, rl, oy);
      hy = Math.min(rl - 0.5, Math.max(ru + 0.5, hy));
    }
    px.y = 16 + (bilinear(src.y, w, h, hx - 0.5, hy - 0.5) - 16) * lid;
    px.u = bilinear(src.u, cw, ch, hx / 2 - 0.5, hy / 2 - 0.5);
    px.v = bilinear(src.v, cw, ch, hx / 2 - 0.5, hy / 2 - 0.5);
  });
  if (cover <= 0) return;
  // Over the lid's lower part too: the mesh's lid line may run below the iris's top
  // (which a stretched lid would drag down as a dark wedge).
  const top = { x: up.x, y: Float64Array.from(up.y) };
  const last = top.y.length - 1;
  for (let k = 1; k < last; k++) {
    top.y[k] -= 0.35 * e.gap * Math.sin(Math.PI * k / last);
  }
  // And a little under the mesh's lower lid line, which may lie on the white of the
  // eye (a narrowed or wrinkled eye): no sliver of it under the lashes.
  const bottom = { x: lo.x, y: Float64Array.from(lo.y) };
  for (let k = 1; k < last; k++) {
    bottom.y[k] += (0.08 * e.gap + 0.6) * Math.sin(Math.PI * k / last);
  }
  // The lid's skin is never much lighter than the lid's usual (its median over the
  // band above the lid line) or the cheek's: a glint on glasses or a lit brow above
  // the lid is not stretched over the eye as a streak. Nor much darker than its lit
  // part (the band's p75): closed, the lid unfolds out of the crease's shade.
  const band: number[] = [], lidBand: number[] = [];
  for (let k = 1; k < 10; k++) {
    const bx = x0 + (x1 - x0) * k / 10;
    const yl = polylineY(rUp.x, rUp.y, bx);
    band.push(bilinear(src.y, w, h, bx - 0.5, yl - 0.5 * e.gap - 0.5));
    for (let d = 0.3; d <= 1.01; d += 0.1) {
      lidBand.push(bilinear(src.y, w, h, bx - 0.5, yl - d * e.gap - 0.5));
    }
  }
  band.sort((a, b) => a - b);
  lidBand.sort((a, b) => a - b);
  const brightest = Math.min(rig.skin.y + 14, band[4] + 12);
  const darkest = Math.min(
    brightest,
    16 + 0.85 * (lidBand[Math.floor(0.75 * (lidBand.length - 1))] - 16),
  );
  const across = (Y: number, X: number) => {
    const yt = polylineY(top.x, top.y, X),
      yl = polylineY(bottom.x, bottom.y, X);
    return Math.min(1, Math.max(0, (Y - yt) / Math.max(0.5, yl - yt)));
  };
  fillLens(
    out,
    w,
    h,
    top,
    bottom,
    (X, Y, px) => {
      unhead(pose, rig, X, Y, p);
      const yl = polylineY(bottom.x, bottom.y, X), t = across(Y, X);
      const lx = p[0], lidLine = polylineY(rUp.x, rUp.y, lx);
      // The lid's skin above the photo's lid line and its lashes, stretched down to
      // the lashes' line, a little darker as it curves down over the eyeball.
      const ly = lidLine - riseAt(e, lx) - e.gap * (0.15 + 0.45 * (1 - t));
      // Averaged across three columns: a hair in the band is not drawn down the lid
      // as a streak.
      const seen = (bilinear(src.y, w, h, lx - 2, ly - 0.5) +
        bilinear(src.y, w, h, lx - 0.5, ly - 0.5) +
        bilinear(src.y, w, h, lx + 1, ly - 0.5)) / 3;
      const lit = Math.max(darkest, Math.min(brightest, seen));
      let y = 16 + (lit - 16) * (1 - 0.1 * t);
      let u = bilinear(src.u, cw, ch, lx / 2 - 0.5, ly / 2 - 0.5);
      let v = bilinear(src.v, cw, ch, lx / 2 - 0.5, ly / 2 - 0.5);
      // A glint's colour goes with its light: the skin's instead.
      const glint = smoothstep(brightest, brightest + 20, seen);
      u += (rig.skin.u - u) * glint;
      v += (rig.skin.v - v) * glint;
      // Along its lower edge the photo's own lashes (read just under its lid line),
      // brought down to where the lids meet.
      const lash = 0.85 * Math.exp(-(((yl - Y) / 1.0) ** 2));
      if (lash > 0.01) {
        // The darkest of three rows about the lid line: the lashes, not the iris
        // under them nor the lid above.
        let ay = lidLine - 0.5;
        for (const dy of [0.5, 1.5]) {
          const yy = lidLine + dy;
          if (
            bilinear(src.y, w, h, lx - 0.5, yy - 0.5) <
              bilinear(src.y, w, h, lx - 0.5, ay - 0.5)
          ) ay = yy;
        }
        const lashY = Math.min(y, bilinear(src.y, w, h, lx - 0.5, ay - 0.5));
        y += (lashY - y) * lash;
        u += (bilinear(src.u, cw, ch, lx / 2 - 0.5, ay / 2 - 0.5) - u) * lash;
        v += (bilinear(src.v, cw, ch, lx / 2 - 0.5, ay / 2 - 0.5) - v) * lash;
      }
      px.y = y, px.u = u, px.v = v;
    },
    () => cover,
    (X, Y) => {
      // Feathered into the lid's skin above the moving lid line; whole over the eye.
      const yu = polylineY(up.x, up.y, X), yt = polylineY(top.x, top.y, X);
      return Y >= yu ? 1 : smoothstep(yt, yu, Y);
    },
  );
}
