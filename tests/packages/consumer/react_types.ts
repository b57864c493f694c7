// The page's side: the packed player's and React binding's types resolve, and what
// the hook answers is typed (not `any`).
import { AvatarPlayer, type PlayerStats } from "@live-avatar/browser";
import {
  type AvatarSession,
  LiveAvatar,
  useAvatarSession,
} from "@live-avatar/react";

type IsAny<T> = 0 extends 1 & T ? true : false;
type NotAny<T> = IsAny<T> extends true ? never : T;
const notAny = <T>(_v: NotAny<T>): void => undefined;

export function useTyped(): AvatarSession {
  const s = useAvatarSession({
    createSession: () =>
      Promise.resolve({
        session_id: "session:x",
        client_token: "t",
        ws_base_url: "wss://avatar.example",
      }),
    refreshToken: () => Promise.resolve({ client_token: "t", expires_at: 0 }),
  });
  notAny(s.state);
  notAny(s.captions[0]);
  notAny(s.error);
  notAny(s.stats);
  notAny(s.player);
  const stats: PlayerStats | null = s.stats;
  notAny(stats?.webcodecs.framesDrawn);
  notAny(LiveAvatar);
  notAny(AvatarPlayer.prototype.on);
  return s;
}
