/**
 * The photo painter's mesh: the rig's vertices, posed open (mouth apart, eyes wide,
 * so the holes are wide), Delaunay-triangulated with the lips' and lids' contours
 * forced in as edges, and the triangles inside the mouth and the eyes dropped.
 */
import { constrain, delaunay } from "./delaunay.ts";
import { insidePolygon } from "./geometry.ts";
import { LIP_INNER_LOWER, LIP_INNER_UPPER } from "./landmarks.ts";

/**
 * Triangles (vertex-index triples) over the points `ox`/`oy` (the posed-open
 * geometry, adjusted here), with holes inside the inner lips and each eye of
 * `eyeSets` ([upper lid, lower lid] contours).
 */
export function meshWithHoles(
  ox: Float64Array,
  oy: Float64Array,
  eyeSets: number[][][],
): Uint32Array {
  // A point lying on a contour (whole-pixel landmarks do) would keep that contour
  // edge out of the mesh: it steps off, away from the hole.
  const sides: Array<[number[], number]> = [
    [LIP_INNER_UPPER, -1],
    [LIP_INNER_LOWER, 1],
    ...eyeSets.flatMap(([up, lo]) =>
      [[up, -1], [lo, 1]] as Array<[number[], number]>
    ),
  ];
  stepOffContours(ox, oy, sides);
  // Coincident points (rounded landmarks) are meshed once, as a contour's own point
  // if one of them is: a lid or lip point standing in for a landmark beside it keeps
  // moving with the lid or lip (the other way round, a blink left that point of the
  // lid up). Kept in index order, so the triangulation is otherwise the same.
  const onContour = new Set([
    ...LIP_INNER_UPPER,
    ...LIP_INNER_LOWER,
    ...eyeSets.flat(2),
  ]);
  const kept = new Set<number>();
  const same = (i: number, j: number) =>
    Math.abs(ox[i] - ox[j]) < 0.25 && Math.abs(oy[i] - oy[j]) < 0.25;
  for (const i of [...[...onContour].sort((p, q) => p - q), ...ox.keys()]) {
    if (kept.has(i)) continue;
    let dup = false;
    for (const j of kept) {
      if (same(i, j)) {
        dup = true;
        break;
      }
    }
    if (!dup) kept.add(i);
  }
  const keep = [...kept].sort((p, q) => p - q);
  const kp = new Float64Array(keep.length * 2);
  keep.forEach((i, k) => (kp[2 * k] = ox[i], kp[2 * k + 1] = oy[i]));
  const raw = delaunay(kp);
  const slot = new Map<number, number>();
  keep.forEach((i, k) => slot.set(i, k));
  const twin = (i: number) => {
    if (slot.has(i)) return slot.get(i)!;
    for (const j of keep) if (same(i, j)) return slot.get(j)!;
    return -1;
  };
  const contours = [LIP_INNER_UPPER, LIP_INNER_LOWER, ...eyeSets.flat()];
  const edges: Array<[number, number]> = [];
  for (const c of contours) {
    for (let k = 1; k < c.length; k++) {
      const a0 = twin(c[k - 1]), b0 = twin(c[k]);
      if (a0 >= 0 && b0 >= 0 && a0 !== b0) edges.push([a0, b0]);
    }
  }
  constrain(kp, raw, edges);
  const holes = [
    {
      x: [
        ...LIP_INNER_UPPER.map((i) => ox[i]),
        ...[...LIP_INNER_LOWER].reverse().map((i) => ox[i]),
      ],
      y: [
        ...LIP_INNER_UPPER.map((i) => oy[i]),
        ...[...LIP_INNER_LOWER].reverse().map((i) => oy[i]),
      ],
    },
    ...eyeSets.map(([up, lo]) => ({
      x: [...up.map((i) => ox[i]), ...[...lo].reverse().map((i) => ox[i])],
      y: [...up.map((i) => oy[i]), ...[...lo].reverse().map((i) => oy[i])],
    })),
  ];
  const tris: number[] = [];
  for (let t = 0; t < raw.length; t += 3) {
    const a0 = keep[raw[t]], b0 = keep[raw[t + 1]], c0 = keep[raw[t + 2]];
    const cx = (ox[a0] + ox[b0] + ox[c0]) / 3,
      cy = (oy[a0] + oy[b0] + oy[c0]) / 3;
    if (holes.some((h) => insidePolygon(h.x, h.y, cx, cy))) continue;
    tris.push(a0, b0, c0);
  }

  return new Uint32Array(tris);
}

/**
 * Moves every point that lies on a segment of a contour (within 0.3 px, between its
 * ends) 0.6 px off it towards `side` (−1 up, 1 down), in the posed-open geometry the
 * triangulation is computed in.
 */
function stepOffContours(
  xs: Float64Array,
  ys: Float64Array,
  contours: Array<[number[], number]>,
): void {
  for (const [c, side] of contours) {
    const on = new Set(c);
    for (let k = 1; k < c.length; k++) {
      const a = c[k - 1], b = c[k];
      const dx = xs[b] - xs[a], dy = ys[b] - ys[a];
      const len2 = dx * dx + dy * dy;
      if (len2 < 1e-9) continue;
      for (let i = 0; i < xs.length; i++) {
        if (on.has(i)) continue;
        const t = ((xs[i] - xs[a]) * dx + (ys[i] - ys[a]) * dy) / len2;
        if (t <= 0.01 || t >= 0.99) continue;
        const px = xs[a] + t * dx, py = ys[a] + t * dy;
        if (Math.hypot(xs[i] - px, ys[i] - py) < 0.3) ys[i] = py + 0.6 * side;
      }
    }
  }
}
