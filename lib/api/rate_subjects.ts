/**
 * Who a request is counted against (DECISIONS 9): a verified principal (an API key's id,
 * the operator key, an IdP subject, a media token's session), else its client address,
 * IPv6 grouped by /64. Subjects are the keys of the rate limiter's windows and of their
 * KV counters; an address or an IdP subject reaches KV only as a keyed MAC.
 */
import { createHash, type Hash } from "node:crypto";
import { ipv6Groups } from "../net_guard.ts";

const SHA256_BLOCK = 64;

/**
 * HMAC-SHA256 (RFC 2104) under one key, with the key's padded blocks hashed once: each
 * MAC then costs two copies of a hash state and two short hashes (~3 µs here), where
 * `createHmac` costs 6–9 µs, as it sets the key up on every call.
 */
export class SubjectMac {
  readonly #inner: Hash;
  readonly #outer: Hash;

  constructor(key: Uint8Array) {
    const k = key.length > SHA256_BLOCK
      ? new Uint8Array(createHash("sha256").update(key).digest())
      : key;
    const ipad = new Uint8Array(SHA256_BLOCK).fill(0x36);
    const opad = new Uint8Array(SHA256_BLOCK).fill(0x5c);
    k.forEach((b, i) => {
      ipad[i] ^= b;
      opad[i] ^= b;
    });
    this.#inner = createHash("sha256").update(ipad);
    this.#outer = createHash("sha256").update(opad);
  }

  /** `kind:` + hex HMAC-SHA256 of `kind \0 value`. */
  subject(kind: "a" | "i", value: string): string {
    const inner = this.#inner.copy().update(kind + "\0" + value).digest();
    return kind + ":" + this.#outer.copy().update(inner).digest("hex");
  }
}

/**
 * The group a client address is counted in: an IPv4 address itself (an IPv4-mapped
 * IPv6 address as its IPv4), an IPv6 address's /64 (`2001:db8:1:2::/64`): one host
 * commonly holds a whole /64, so counting each address apart would give it 2^64
 * windows. Anything else (`unknown`) is its own group.
 */
export function addressGroup(addr: string): string {
  if (!addr.includes(":")) return addr;
  const g = ipv6Groups(addr);
  if (g === null) return addr;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  }
  return g.slice(0, 4).map((x) => x.toString(16)).join(":") + "::/64";
}

/** The subject of a verified API key: its id (the key record proved the secret). */
export function keySubject(keyId: string): string {
  return "k:" + keyId;
}

/** The subject of the operator credential (`ADMIN_API_KEY`). */
export const OPERATOR_SUBJECT = "o:";

/** The subject of a verified media token: the session it is for. */
export function mediaSubject(sessionId: string): string {
  return "m:" + sessionId;
}

/** Whether `subject` is a client address's (the unverified windows). */
export function isAddressSubject(subject: string): boolean {
  return subject.startsWith("a:");
}
