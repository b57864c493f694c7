/** Time-ordered, URL-safe identifiers, so `kv.list` pages come back in creation order. */

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

let lastTime = -1;
let lastRandom: Uint8Array = new Uint8Array(10);

function incrementRandom(bytes: Uint8Array): Uint8Array {
  const next = bytes.slice();
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i] === 255) {
      next[i] = 0;
    } else {
      next[i]++;
      break;
    }
  }
  return next;
}

/**
 * A ULID: 48-bit millisecond time + 80 random bits, Crockford base32, 26 characters.
 * Monotonic within one process: ids minted in the same millisecond still sort in order.
 */
export function ulid(now: number = Date.now()): string {
  let random: Uint8Array;
  if (now === lastTime) {
    random = incrementRandom(lastRandom);
  } else {
    random = crypto.getRandomValues(new Uint8Array(10));
  }
  lastTime = now;
  lastRandom = random;
  let out = "";
  let t = now;
  const timeChars: string[] = [];
  for (let i = 0; i < 10; i++) {
    timeChars.unshift(CROCKFORD[t % 32]);
    t = Math.floor(t / 32);
  }
  out += timeChars.join("");
  // 80 bits -> 16 base32 characters.
  let bits = 0;
  let value = 0;
  for (const byte of random) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out;
}

/** URL-safe base64 without padding. */
export function base64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new TypeError("not base64url");
  const b64 = text.replaceAll("-", "+").replaceAll("_", "/") +
    "===".slice((text.length + 3) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** `n` random bytes as base64url. */
export function randomToken(n = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(n)));
}
