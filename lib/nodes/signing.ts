/**
 * The handoff call's signature: the control plane signs each call to a media node with
 * HMAC-SHA256 under `NODE_SECRET` over the timestamp, method, path and body bytes; the
 * node refuses a signature that does not verify, one more than `MAX_SKEW_MS` from its
 * own clock, and one it has already seen (a replay inside the window).
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";

/** The header carrying `t=<epoch ms>,v1=<hex HMAC>`. */
export const SIGNATURE_HEADER = "x-avatar-node-signature";
/** How far a signature's timestamp may be from the verifier's clock. */
export const MAX_SKEW_MS = 30_000;

function mac(
  secret: Uint8Array,
  t: number,
  method: string,
  path: string,
  body: Uint8Array,
): Buffer {
  return createHmac("sha256", secret)
    .update(`avatar-node-v1\n${t}\n${method.toUpperCase()}\n${path}\n`)
    .update(body)
    .digest();
}

/** The signature header's value for a call made at `now` (epoch ms). */
export function signCall(
  secret: Uint8Array,
  method: string,
  path: string,
  body: Uint8Array,
  now: number,
): string {
  return `t=${now},v1=${mac(secret, now, method, path, body).toString("hex")}`;
}

/**
 * Signatures seen inside the skew window, so that each verifies once. Bounded: past
 * `max` entries the oldest go first (a flood of valid signatures needs the secret).
 */
export class ReplayGuard {
  #seen = new Map<string, number>();
  constructor(readonly max = 10_000) {}

  /** True the first time `sig` is offered before `expiresAt`; false for a replay. */
  first(sig: string, expiresAt: number, now: number): boolean {
    for (const [s, exp] of this.#seen) {
      if (exp > now && this.#seen.size < this.max) break;
      this.#seen.delete(s);
    }
    if (this.#seen.has(sig)) return false;
    this.#seen.set(sig, expiresAt);
    return true;
  }
}

/**
 * Whether `header` signs this call under one of `secrets` (the current one, and the
 * previous one during a rotation), fresh and not seen before.
 */
export function verifyCall(
  secrets: Uint8Array | readonly Uint8Array[],
  header: string | null,
  method: string,
  path: string,
  body: Uint8Array,
  now: number,
  replays: ReplayGuard,
): boolean {
  const m = /^t=(\d{1,15}),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m) return false;
  const t = Number(m[1]);
  if (Math.abs(now - t) > MAX_SKEW_MS) return false;
  const got = Buffer.from(m[2], "hex");
  const keys = secrets instanceof Uint8Array ? [secrets] : secrets;
  // Every key is tried, so the time taken does not say which one matched.
  let ok = false;
  for (const key of keys) {
    if (timingSafeEqual(mac(key, t, method, path, body), got)) ok = true;
  }
  return ok && replays.first(m[2], t + MAX_SKEW_MS, now);
}
