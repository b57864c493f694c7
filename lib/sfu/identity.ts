/**
 * Which Janus an instance uses, as a short id that mountpoint records carry
 * (lib/sfu/mountpoints.ts): a mountpoint id means something only on the Janus that
 * made it, so only instances on that Janus may destroy it. Each media node may run its
 * own Janus, or several instances may share one.
 */
import { base64url } from "../ids.ts";

/** Bumped if what identifies an SFU ever changes (old and new ids then differ). */
const DOMAIN = "avatar-sfu-id:v1";

/**
 * The id of the SFU at `url` with streaming-plugin admin key `apiKey` (`SFU_URL`,
 * `SFU_API_KEY`): base64url of the first 16 bytes of SHA-256 over both. The URL alone
 * is not enough (every node's own Janus listens on the same loopback URL); the key is
 * fresh at every `deno task sfu` start, so two Janus differ while instances sharing
 * one (same URL, same key) agree. Only the hash is stored, never the key: one that
 * `deno task sfu` made (24 random bytes) cannot be guessed back from it.
 */
export async function sfuIdentity(
  sfu: { url: string; apiKey: string },
): Promise<string> {
  const text = JSON.stringify([DOMAIN, new URL(sfu.url).href, sfu.apiKey]);
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(text),
  );
  return base64url(new Uint8Array(digest).slice(0, 16));
}
