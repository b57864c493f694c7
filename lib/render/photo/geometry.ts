/** Small 2-D helpers of the photo painter: polygons, polylines, easing. */

/** 0 at `a`, 1 at `b`, smooth between (either order of `a` and `b`). */
export function smoothstep(a: number, b: number, x: number): number {
  const t = Math.min(1, Math.max(0, (x - a) / (b - a)));
  return t * t * (3 - 2 * t);
}

/** Whether (x, y) is inside the polygon `xs`/`ys` (even–odd rule). */
export function insidePolygon(
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  x: number,
  y: number,
): boolean {
  let inside = false;
  const n = xs.length;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    if (
      (ys[i] > y) !== (ys[j] > y) &&
      x < xs[j] + (xs[i] - xs[j]) * (y - ys[j]) / (ys[i] - ys[j])
    ) inside = !inside;
  }
  return inside;
}

/**
 * y of the polyline `xs`/`ys` (x increasing, clamped at its ends) at `x`: the lips'
 * and lids' contours, which run corner to corner.
 */
export function polylineY(
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  x: number,
): number {
  const n = xs.length;
  if (x <= xs[0]) return ys[0];
  for (let i = 1; i < n; i++) {
    if (x <= xs[i]) {
      const d = xs[i] - xs[i - 1];
      return d > 1e-9
        ? ys[i - 1] + (ys[i] - ys[i - 1]) * (x - xs[i - 1]) / d
        : ys[i];
    }
  }
  return ys[n - 1];
}
