/**
 * Photo avatars (DECISIONS 12): a tenant's portrait checked and prepared once, at upload,
 * into the `PhotoAvatar` the photo painter (lib/render/photo/) reads; stored in KV under
 * the tenant, listed, removed, and loaded once per instance by the media node.
 */
export { MAX_PHOTO_BYTES, MAX_PHOTO_SIDE } from "./decode.ts";
export { PhotoRefusal, type PhotoRefusalCause } from "./refusal.ts";
export { MIN_FACE_WIDTH, type PhotoMeta } from "./prepare.ts";
export { closePhotoWorker, preparePhoto } from "./worker.ts";
export {
  addPhotoAvatar,
  type AddPhotoInput,
  administeredPhotoManifest,
  getPhotoManifest,
  listPhotoAvatars,
  PHOTO_AVATAR_ID,
  PHOTO_NAME_MAX,
  type PhotoAvatarEntry,
  photoEntryOf,
  type PhotoManifest,
  readPhotoAvatar,
  removePhotoAvatar,
} from "./store.ts";
export { type PhotoPreview, photoPreview } from "./preview.ts";
export { loadPhotoAvatar } from "./cache.ts";
export {
  type Framing,
  FRAMINGS,
  isFraming,
  type PhotoAvatar,
} from "../render/photo/types.ts";
