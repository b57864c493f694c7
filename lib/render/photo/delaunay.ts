/**
 * Delaunay triangulation (Bowyer–Watson) of a few hundred points: the photo painter's
 * mesh over the face landmarks and the anchors around the head and on the frame. Run
 * once per avatar (cached), so the quadratic search is not a concern.
 */

/** Triangles of `pts` (x, y pairs) as vertex-index triples, counter-clockwise. */
export function delaunay(pts: Float64Array): Uint32Array {
  const n = pts.length / 2;
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let i = 0; i < n; i++) {
    minX = Math.min(minX, pts[2 * i]);
    maxX = Math.max(maxX, pts[2 * i]);
    minY = Math.min(minY, pts[2 * i + 1]);
    maxY = Math.max(maxY, pts[2 * i + 1]);
  }
  const span = Math.max(maxX - minX, maxY - minY) * 20;
  const mx = (minX + maxX) / 2, my = (minY + maxY) / 2;
  // The super-triangle's three corners are vertices n, n+1, n+2.
  const xs = new Float64Array(n + 3), ys = new Float64Array(n + 3);
  for (let i = 0; i < n; i++) (xs[i] = pts[2 * i], ys[i] = pts[2 * i + 1]);
  xs[n] = mx - span, ys[n] = my - span;
  xs[n + 1] = mx + span, ys[n + 1] = my - span;
  xs[n + 2] = mx, ys[n + 2] = my + span;
  type Tri = {
    a: number;
    b: number;
    c: number;
    x: number;
    y: number;
    r2: number;
  };
  const make = (a: number, b: number, c: number): Tri => {
    // Counter-clockwise in y-down image coordinates is clockwise on paper; the sign
    // of the cross product fixes one order for all.
    const cross = (xs[b] - xs[a]) * (ys[c] - ys[a]) -
      (ys[b] - ys[a]) * (xs[c] - xs[a]);
    if (cross < 0) [b, c] = [c, b];
    const ax = xs[a],
      ay = ys[a],
      bx = xs[b],
      by = ys[b],
      cx = xs[c],
      cy = ys[c];
    const d = 2 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by));
    const a2 = ax * ax + ay * ay,
      b2 = bx * bx + by * by,
      c2 = cx * cx + cy * cy;
    const x = (a2 * (by - cy) + b2 * (cy - ay) + c2 * (ay - by)) / d;
    const y = (a2 * (cx - bx) + b2 * (ax - cx) + c2 * (bx - ax)) / d;
    return { a, b, c, x, y, r2: (ax - x) ** 2 + (ay - y) ** 2 };
  };
  let tris: Tri[] = [make(n, n + 1, n + 2)];
  for (let p = 0; p < n; p++) {
    const px = xs[p], py = ys[p];
    const keep: Tri[] = [];
    const edges = new Map<string, [number, number]>();
    for (const t of tris) {
      if ((px - t.x) ** 2 + (py - t.y) ** 2 < t.r2 * (1 + 1e-12)) {
        for (const [u, v] of [[t.a, t.b], [t.b, t.c], [t.c, t.a]]) {
          const key = u < v ? `${u},${v}` : `${v},${u}`;
          if (edges.has(key)) edges.delete(key);
          else edges.set(key, [u, v]);
        }
      } else keep.push(t);
    }
    for (const [u, v] of edges.values()) keep.push(make(u, v, p));
    tris = keep;
  }
  const out: number[] = [];
  for (const t of tris) {
    if (t.a >= n || t.b >= n || t.c >= n) continue;
    out.push(t.a, t.b, t.c);
  }
  return new Uint32Array(out);
}

/** Whether segments p1–p2 and p3–p4 cross at a point inside both. */
function crosses(
  pts: Float64Array,
  p1: number,
  p2: number,
  p3: number,
  p4: number,
): boolean {
  if (p1 === p3 || p1 === p4 || p2 === p3 || p2 === p4) return false;
  const o = (a: number, b: number, c: number) =>
    (pts[2 * b] - pts[2 * a]) * (pts[2 * c + 1] - pts[2 * a + 1]) -
    (pts[2 * b + 1] - pts[2 * a + 1]) * (pts[2 * c] - pts[2 * a]);
  return o(p1, p2, p3) * o(p1, p2, p4) < 0 && o(p3, p4, p1) * o(p3, p4, p2) < 0;
}

/**
 * Makes each edge of `edges` (index pairs into `pts`) an edge of the triangulation
 * `tris` (in place) by flipping the edges that cross it, as a constrained Delaunay
 * triangulation does: the lips' and lids' contours must be mesh edges, or triangles
 * would bridge the mouth and the eyes.
 */
export function constrain(
  pts: Float64Array,
  tris: Uint32Array,
  edges: Array<[number, number]>,
): void {
  const orient = (t: number) => {
    const a = tris[t], b = tris[t + 1], c = tris[t + 2];
    const cross =
      (pts[2 * b] - pts[2 * a]) * (pts[2 * c + 1] - pts[2 * a + 1]) -
      (pts[2 * b + 1] - pts[2 * a + 1]) * (pts[2 * c] - pts[2 * a]);
    if (cross < 0) (tris[t + 1] = c, tris[t + 2] = b);
  };
  for (const [a, b] of edges) {
    for (let guard = 0; guard < 200; guard++) {
      let flipped = false;
      let found = false;
      for (let t = 0; t < tris.length && !flipped; t += 3) {
        for (let e = 0; e < 3 && !flipped; e++) {
          const p = tris[t + e],
            q = tris[t + (e + 1) % 3],
            r = tris[t + (e + 2) % 3];
          if (!crosses(pts, a, b, p, q)) continue;
          found = true;
          // The triangle on the other side of p–q, and its far vertex s.
          for (let u = 0; u < tris.length; u += 3) {
            if (u === t) continue;
            const i = [tris[u], tris[u + 1], tris[u + 2]];
            if (!i.includes(p) || !i.includes(q)) continue;
            const s = i.find((x) => x !== p && x !== q)!;
            // Only a convex quad p-r-q-s can flip to r–s.
            if (!crosses(pts, p, q, r, s)) break;
            tris[t] = r, tris[t + 1] = s, tris[t + 2] = p;
            tris[u] = s, tris[u + 1] = r, tris[u + 2] = q;
            orient(t), orient(u);
            flipped = true;
            break;
          }
        }
      }
      if (!found || !flipped) break;
    }
  }
}
