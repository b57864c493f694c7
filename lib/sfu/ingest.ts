/**
 * A mountpoint's ingest and access (DECISIONS 11): the host its RTP ports bind to, and its
 * `secret`, `pin` and SRTP key, HMACs of its id under the streaming plugin's
 * `admin_key` — unguessable without that key, never stored, and the same on every
 * instance sharing the key (./janus.ts uses them).
 */
import { localInterfaceAddresses } from "./candidates.ts";

/**
 * The default ingest host: loopback when Janus is on this host (SFU_URL names a
 * loopback or local address, or a name), else SFU_URL's IPv4 host (its private network).
 */
export function defaultIngestHost(
  url: string,
  local: readonly string[] = localInterfaceAddresses(),
): string {
  const host = new URL(url).hostname;
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) return "127.0.0.1";
  return host.startsWith("127.") || local.includes(host) ? "127.0.0.1" : host;
}

async function hmacBytes(key: string, text: string): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(key),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(
    await crypto.subtle.sign("HMAC", k, new TextEncoder().encode(text)),
  );
}

/** A mountpoint's secret (`kind` "secret") or pin (`kind` "pin"). */
export async function mountpointCredential(
  adminKey: string,
  kind: "secret" | "pin",
  id: number,
): Promise<string> {
  const mac = await hmacBytes(adminKey, `avatar-sfu-${kind}:${id}`);
  return btoa(String.fromCharCode(...mac)).replace(/[+/=]/g, "").slice(0, 32);
}

/** A mountpoint's SRTP master key and salt: 30 bytes, base64 (SDES `inline:` form). */
export async function mountpointSrtpKey(
  adminKey: string,
  id: number,
): Promise<string> {
  const mac = await hmacBytes(adminKey, `avatar-sfu-srtp:${id}`);
  return btoa(String.fromCharCode(...mac.subarray(0, 30)));
}
