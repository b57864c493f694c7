/**
 * Standard Webhooks signing: secrets are `whsec_` + base64 key bytes; a signature is
 * `v1,` + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")); several signatures (one
 * per valid secret, during a rotation) are space-separated in `webhook-signature`.
 */
import { createHmac } from "node:crypto";

export const SECRET_PREFIX = "whsec_";
/** Shortest key accepted from `WEBHOOK_SECRET`; generated keys are 32 bytes. */
export const MIN_SECRET_BYTES = 16;

/** The key bytes of a `whsec_…` secret (the prefix is optional); throws when invalid. */
export function secretKey(secret: string): Uint8Array {
  const b64 = secret.startsWith(SECRET_PREFIX)
    ? secret.slice(SECRET_PREFIX.length)
    : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) {
    throw new TypeError("webhook secret must be whsec_ followed by base64");
  }
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A fresh secret: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return SECRET_PREFIX + btoa(bin);
}

/** One `v1,<base64>` signature of `body` for message `id` at `timestampS` (epoch s). */
export function signOne(
  secret: string,
  id: string,
  timestampS: number,
  body: string,
): string {
  const mac = createHmac("sha256", secretKey(secret))
    .update(`${id}.${timestampS}.`)
    .update(body)
    .digest("base64");
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers for one attempt, signed with every secret. */
export function signatureHeaders(
  secrets: string[],
  id: string,
  timestampS: number,
  body: string,
): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampS),
    "webhook-signature": secrets.map((s) => signOne(s, id, timestampS, body))
      .join(" "),
  };
}
