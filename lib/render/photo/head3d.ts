/**
 * The head in three dimensions, for the photo painter: the face's own axes found from
 * the landmarks' 3-D positions (a turned or tilted portrait's jaw, lips and lids move
 * along the face, not along the picture's rows), and the head's rotation about the
 * neck (yaw, pitch, roll) projected orthographically back onto the picture.
 */

/** Symmetric landmark pairs, the image's left one first: the face's x axis. */
const PAIRS = [
  [33, 263],
  [133, 362],
  [234, 454],
  [127, 356],
  [93, 323],
  [58, 288],
  [172, 397],
  [61, 291],
  [70, 300],
  [105, 334],
];
/** Midline landmarks, top then bottom: the face's y axis. */
const MIDLINE = [[10, 152], [151, 175], [9, 199], [168, 18]];

/**
 * The face's axes: `m` (row-major 3×3) turns a face-frame offset (x to the face's
 * left-in-image side, y down the face, z away from the viewer) into the image's, about
 * the origin `o` (image x, y and depth).
 */
export interface FaceAxes {
  m: Float64Array;
  o: Float64Array;
}

function norm(v: number[]): number[] {
  const l = Math.hypot(v[0], v[1], v[2]) || 1;
  return [v[0] / l, v[1] / l, v[2] / l];
}

/** Turns and tilts below these (radians) are the mesh's own noise: none is undone. */
const YAW_FLOOR = 0.06, ROLL_FLOOR = 0.05;

/** `v` less `floor` towards 0, eased over the next `floor`. */
function beyond(v: number, floor: number): number {
  const a = Math.abs(v);
  if (a <= floor) return 0;
  const k = Math.min(1, (a - floor) / floor);
  return Math.sign(v) * (a - floor * (1 - k));
}

/**
 * The face's axes from the 468 landmarks `px`, `py`, `pz` (image pixels and depth),
 * about `origin`: the x axis from its symmetric pairs, the y axis down its midline
 * (made square to x), z their cross product. Only its yaw and roll are kept (a
 * raised or lowered face still opens its mouth down the picture's projection of it),
 * each past a floor the landmarks' noise stays under.
 */
export function faceAxes(
  px: ArrayLike<number>,
  py: ArrayLike<number>,
  pz: ArrayLike<number>,
  origin: [number, number, number],
): FaceAxes {
  const found = measuredAxes(px, py, pz, origin);
  const a = axesAngles(found);
  headRotation(
    beyond(a.yaw, YAW_FLOOR),
    0,
    beyond(a.roll, ROLL_FLOOR),
    found.m,
  );
  return found;
}

/**
 * The face's axes as the landmarks have them (no floor, its pitch kept): with depths in
 * the picture's pixels, `axesAngles` of them is the head's turn in true degrees.
 */
export function measuredAxes(
  px: ArrayLike<number>,
  py: ArrayLike<number>,
  pz: ArrayLike<number>,
  origin: [number, number, number] = [0, 0, 0],
): FaceAxes {
  let ax = [0, 0, 0], ay = [0, 0, 0];
  for (const [l, r] of PAIRS) {
    ax = [ax[0] + px[r] - px[l], ax[1] + py[r] - py[l], ax[2] + pz[r] - pz[l]];
  }
  for (const [t, b] of MIDLINE) {
    ay = [ay[0] + px[b] - px[t], ay[1] + py[b] - py[t], ay[2] + pz[b] - pz[t]];
  }
  const x = norm(ax);
  const d = ay[0] * x[0] + ay[1] * x[1] + ay[2] * x[2];
  const y = norm([ay[0] - d * x[0], ay[1] - d * x[1], ay[2] - d * x[2]]);
  const z = [
    x[1] * y[2] - x[2] * y[1],
    x[2] * y[0] - x[0] * y[2],
    x[0] * y[1] - x[1] * y[0],
  ];
  return {
    m: Float64Array.of(x[0], y[0], z[0], x[1], y[1], z[1], x[2], y[2], z[2]),
    o: Float64Array.from(origin),
  };
}

/**
 * Image points (`x`, `y`, `z`) in the face's frame, about the axes' origin (so the
 * origin keeps its coordinates and a frontal face's points keep theirs).
 */
export function toFaceFrame(
  a: FaceAxes,
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  z: ArrayLike<number>,
): { fx: Float64Array; fy: Float64Array; fz: Float64Array } {
  const n = x.length, m = a.m, o = a.o;
  const fx = new Float64Array(n),
    fy = new Float64Array(n),
    fz = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const dx = x[i] - o[0], dy = y[i] - o[1], dz = z[i] - o[2];
    // The transpose undoes the rotation.
    fx[i] = o[0] + m[0] * dx + m[3] * dy + m[6] * dz;
    fy[i] = o[1] + m[1] * dx + m[4] * dy + m[7] * dz;
    fz[i] = o[2] + m[2] * dx + m[5] * dy + m[8] * dz;
  }
  return { fx, fy, fz };
}

/** Yaw, pitch and roll (radians) from the axes: how the portrait's head is turned. */
export function axesAngles(a: FaceAxes): {
  yaw: number;
  pitch: number;
  roll: number;
} {
  const m = a.m;
  return {
    yaw: Math.asin(Math.max(-1, Math.min(1, m[6]))),
    pitch: Math.atan2(m[7], m[8]),
    roll: Math.atan2(m[3], m[0]),
  };
}

/**
 * The rotation (row-major 3×3, into `out`) of a head turned by `yaw` (about the
 * vertical; positive turns its front towards the image's right), `pitch` (about the
 * horizontal; positive lowers its front: a nod) and `roll` (in the picture's plane,
 * positive clockwise), in that order of application: pitch, yaw, then roll.
 */
export function headRotation(
  yaw: number,
  pitch: number,
  roll: number,
  out: Float64Array,
): void {
  const cy = Math.cos(yaw), sy = Math.sin(yaw);
  const cp = Math.cos(pitch), sp = Math.sin(pitch);
  const cr = Math.cos(roll), sr = Math.sin(roll);
  // Rz(roll) · Ry(yaw) · Rx(pitch), with y down and z away from the viewer: a
  // positive pitch takes the front (−z) down (+y), a positive yaw takes it right.
  const r00 = cy, r01 = -sy * sp, r02 = -sy * cp;
  const r10 = 0, r11 = cp, r12 = -sp;
  const r20 = sy, r21 = cy * sp, r22 = cy * cp;
  out[0] = cr * r00 - sr * r10;
  out[1] = cr * r01 - sr * r11;
  out[2] = cr * r02 - sr * r12;
  out[3] = sr * r00 + cr * r10;
  out[4] = sr * r01 + cr * r11;
  out[5] = sr * r02 + cr * r12;
  out[6] = r20;
  out[7] = r21;
  out[8] = r22;
}
