/** The browser player's options with their defaults filled in (client/browser.ts). */
import type { AvatarPlayerOptions } from "./player_types.ts";

/** Options the player always has a value for, and the optional ones it reads as given. */
export type PlayerConfig =
  & Required<
    Omit<
      AvatarPlayerOptions,
      | "expiresAt"
      | "workletUrl"
      | "audioWorkletUrl"
      | "transport"
      | "iceServers"
      | "canvas"
    >
  >
  & Pick<AvatarPlayerOptions, "expiresAt" | "workletUrl">;

/**
 * `options` over the defaults: the microphone on at 24 kHz in 20-ms frames, reconnects
 * on (8 failed dials at most), 1 s of latency at most, the decoder the browser supports.
 */
export function playerConfig(options: AvatarPlayerOptions): PlayerConfig {
  return {
    microphone: true,
    micSampleRate: 24000,
    frameMs: 20,
    reconnect: true,
    maxReconnectAttempts: 8,
    maxLatencyS: 1,
    decoder: "auto",
    now: Date.now,
    ...options,
  };
}
