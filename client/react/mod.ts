/**
 * React binding of the browser player: `useAvatarSession` (a hook) and `LiveAvatar` /
 * `AvatarView` (components). Published as `@live-avatar/react` (`deno task pack`).
 */
export {
  type AvatarPlayerTuning,
  type AvatarSession,
  type AvatarSessionGrant,
  useAvatarSession,
  type UseAvatarSessionOptions,
} from "./session.ts";
export {
  AvatarView,
  type AvatarViewProps,
  LiveAvatar,
  type LiveAvatarProps,
} from "./view.ts";
export type {
  CaptionDetail,
  EndedDetail,
  ErrorDetail,
  FreshToken,
  PlayerState,
  PlayerStats,
} from "@live-avatar/browser";
