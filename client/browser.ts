/**
 * The browser client of the live avatar service, as pages import it (the
 * `@live-avatar/browser` package, `deno task pack`): the player (./player.ts) and what
 * a page may want beside it — the worklet sources to serve as files under a strict CSP,
 * and the MSE and WebRTC playbacks on their own.
 *
 * Bundle for a page without npm: `deno bundle --platform browser -o avatar.js
 * client/browser.ts`.
 */
import { AvatarPlayer } from "./player.ts";
import type { AvatarPlayerOptions } from "./player_types.ts";

export { AvatarPlayer } from "./player.ts";
export { LiveBuffer } from "./mse.ts";
export { RtcPlayback } from "./webrtc.ts";
export { PCM_WORKLET_SOURCE } from "./pcm-worklet.ts";
export { AUDIO_OUT_SOURCE } from "./webcodecs/audio_out.ts";
export type * from "./player_types.ts";

/** Creates an `AvatarPlayer` and connects it. */
export async function connectAvatar(
  options: AvatarPlayerOptions,
): Promise<AvatarPlayer> {
  const player = new AvatarPlayer(options);
  await player.connect();
  return player;
}
