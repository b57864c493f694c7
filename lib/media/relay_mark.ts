/**
 * The mark a relay (./relay.ts) puts on the socket it opens to a session's holder:
 * header `X-Avatar-Relayed: t=<epoch ms>,v1=<hex HMAC-SHA256>` over the time, the
 * holder's instance id and the session id, under the instances' shared secret
 * (`NODE_SECRET`, else `TOKEN_SECRET`). A socket that carries a valid mark came through
 * a relay and is never relayed again; one whose mark does not verify is refused, so a
 * client can neither forge one nor strip one to make an instance loop.
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Config } from "../config.ts";

export const RELAY_HEADER = "x-avatar-relayed";
/** How far a mark's time may be from the checking instance's clock. */
export const RELAY_MARK_MAX_SKEW_MS = 30_000;

/** The keys of the mark: `NODE_SECRET` (and its previous one), else `TOKEN_SECRET`. */
export function relaySecrets(config: Config): Uint8Array[] {
  if (config.nodeSecret) {
    return config.nodeSecretPrevious
      ? [config.nodeSecret, config.nodeSecretPrevious]
      : [config.nodeSecret];
  }
  return config.tokenSecret ? [config.tokenSecret] : [];
}

function relayMac(
  secret: Uint8Array,
  t: number,
  node: string,
  sessionId: string,
): Buffer {
  return createHmac("sha256", secret)
    .update(`avatar-relay-v1\n${t}\n${node}\n${sessionId}`).digest();
}

/** The relay header's value for a socket to `node` for `sessionId`. */
export function signRelayMark(
  secret: Uint8Array,
  node: string,
  sessionId: string,
  now: number,
): string {
  return `t=${now},v1=${
    relayMac(secret, now, node, sessionId).toString("hex")
  }`;
}

/**
 * Whether a socket came through a relay: `absent` (no header), `valid` (a fresh mark
 * for `node`, the session's holder, and the session under one of `secrets`), or
 * `invalid` (anything else).
 */
export function checkRelayMark(
  secrets: readonly Uint8Array[],
  header: string | null,
  node: string,
  sessionId: string,
  now: number,
): "absent" | "valid" | "invalid" {
  if (header === null) return "absent";
  const m = /^t=(\d{1,15}),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return "invalid";
  const t = Number(m[1]);
  if (Math.abs(now - t) > RELAY_MARK_MAX_SKEW_MS) return "invalid";
  const got = Buffer.from(m[2], "hex");
  // Every key is tried, so the time taken does not say which one matched.
  let ok = false;
  for (const key of secrets) {
    if (timingSafeEqual(relayMac(key, t, node, sessionId), got)) ok = true;
  }
  return ok ? "valid" : "invalid";
}
