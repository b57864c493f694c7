/**
 * The face-mesh landmarks the photo painter moves, by MediaPipe index (468 face points,
 * then 10 iris points): the lips' outer and inner contours, the eyes' lids and the face
 * oval. Each contour runs from one corner to the other, left to right in the image.
 */
import { LANDMARK_COUNT } from "./types.ts";

/** Outer edge of the upper lip, corner 61 to corner 291. */
export const LIP_OUTER_UPPER = [
  61,
  185,
  40,
  39,
  37,
  0,
  267,
  269,
  270,
  409,
  291,
];
/** Outer edge of the lower lip, corner 61 to corner 291. */
export const LIP_OUTER_LOWER = [
  61,
  146,
  91,
  181,
  84,
  17,
  314,
  405,
  321,
  375,
  291,
];
/** Inner edge of the upper lip (where the mouth opens), corner 78 to 308. */
export const LIP_INNER_UPPER = [
  78,
  191,
  80,
  81,
  82,
  13,
  312,
  311,
  310,
  415,
  308,
];
/** Inner edge of the lower lip, corner 78 to 308. */
export const LIP_INNER_LOWER = [
  78,
  95,
  88,
  178,
  87,
  14,
  317,
  402,
  318,
  324,
  308,
];

/** The eye on the image's left (the subject's right): upper and lower lid, 33 to 133. */
export const EYE_A_UPPER = [33, 246, 161, 160, 159, 158, 157, 173, 133];
export const EYE_A_LOWER = [33, 7, 163, 144, 145, 153, 154, 155, 133];
/** The eye on the image's right: upper and lower lid, 362 to 263. */
export const EYE_B_UPPER = [362, 398, 384, 385, 386, 387, 388, 466, 263];
export const EYE_B_LOWER = [362, 382, 381, 380, 374, 373, 390, 249, 263];

/** Face oval, clockwise from the top of the forehead. */
export const FACE_OVAL = [
  10,
  338,
  297,
  332,
  284,
  251,
  389,
  356,
  454,
  323,
  361,
  288,
  397,
  365,
  379,
  378,
  400,
  377,
  152,
  148,
  176,
  149,
  150,
  136,
  172,
  58,
  132,
  93,
  234,
  127,
  162,
  21,
  54,
  103,
  67,
  109,
];

export const FOREHEAD = 10;
export const CHIN = 152;
/** The face's sides at cheek level, in front of the ears (the jaw pivots behind them). */
export const CHEEK_A = 234;
export const CHEEK_B = 454;
/** First iris landmark; each iris is a centre and four points on its rim. */
export const IRIS_START = 468;

/** Whether the landmarks are complete and finite. */
export function validLandmarks(lm: Float32Array): boolean {
  if (lm.length !== LANDMARK_COUNT * 3) return false;
  for (let i = 0; i < lm.length; i++) if (!Number.isFinite(lm[i])) return false;
  return true;
}
