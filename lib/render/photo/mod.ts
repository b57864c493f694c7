/** Photo avatars' painter (DECISIONS 12): see ./painter.ts. */
export {
  createPhotoPainter,
  isPhotoAvatarId,
  type PhotoPainterOptions,
  photoPainters,
  type ThreadPainters,
} from "./painter.ts";
export { LANDMARK_COUNT, PHOTO_SIZE, type PhotoAvatar } from "./types.ts";
