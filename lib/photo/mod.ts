/**
 * Photo avatars (DECISIONS 12): a tenant's portrait checked and prepared once, at upload,
 * into the `PhotoAvatar` the photo painter (lib/render/photo/) reads.
 */
export { MAX_PHOTO_BYTES, MAX_PHOTO_SIDE } from "./decode.ts";
export { PhotoRefusal, type PhotoRefusalCause } from "./refusal.ts";
export { MIN_FACE_WIDTH, type PhotoMeta, preparePhoto } from "./prepare.ts";
export type { PhotoAvatar } from "../render/photo/types.ts";
