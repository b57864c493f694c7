/**
 * The handoff call's signature: the control plane signs each call to a media node with
 * HMAC-SHA256 under `NODE_SECRET`, twice. The head MAC (`h`) covers the timestamp,
 * method, path, the target node's instance id and the body's length, so a node checks
 * it before reading a byte of body; the body MAC (`v1`) covers the same and the body
 * bytes. A node refuses a signature that does not verify, one more than `MAX_SKEW_MS`
 * from its own clock, one made for another node, and one any node has already taken
 * (`firstUse`, a KV-backed guard shared by every node).
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";

/** The header carrying `t=<epoch ms>,n=<node id>,l=<length>,h=<hex>,v1=<hex>`. */
export const SIGNATURE_HEADER = "x-avatar-node-signature";
/** How far a signature's timestamp may be from the verifier's clock. */
export const MAX_SKEW_MS = 30_000;

/** What a call is, as both MACs see it. */
export interface CallTarget {
  method: string;
  path: string;
  /** The instance id of the node the call is for. */
  node: string;
}

/** A parsed signature header. */
export interface CallSignature {
  t: number;
  node: string;
  length: number;
  head: Buffer;
  body: Buffer;
  /** The body MAC's hex, the replay guard's key (heads alike in one ms collide). */
  bodyHex: string;
}

function prefix(kind: string, t: number, c: CallTarget): string {
  return `avatar-node-v2-${kind}\n${t}\n${c.method.toUpperCase()}\n${c.path}\n${c.node}\n`;
}

function headMac(
  secret: Uint8Array,
  t: number,
  c: CallTarget,
  length: number,
): Buffer {
  return createHmac("sha256", secret).update(prefix("head", t, c) + length)
    .digest();
}

function bodyMac(
  secret: Uint8Array,
  t: number,
  c: CallTarget,
  body: Uint8Array,
): Buffer {
  return createHmac("sha256", secret).update(prefix("body", t, c)).update(body)
    .digest();
}

/** The signature header's value for a call to `target.node` made at `now` (epoch ms). */
export function signCall(
  secret: Uint8Array,
  target: CallTarget,
  body: Uint8Array,
  now: number,
): string {
  const h = headMac(secret, now, target, body.byteLength).toString("hex");
  const v = bodyMac(secret, now, target, body).toString("hex");
  return `t=${now},n=${target.node},l=${body.byteLength},h=${h},v1=${v}`;
}

const HEADER_RE =
  /^t=(\d{1,15}),n=([A-Za-z0-9._:-]{1,100}),l=(\d{1,9}),h=([0-9a-f]{64}),v1=([0-9a-f]{64})$/;

/** The header's parts, or null when it is absent or malformed. */
export function parseSignature(header: string | null): CallSignature | null {
  const m = HEADER_RE.exec(header ?? "");
  if (!m) return null;
  return {
    t: Number(m[1]),
    node: m[2],
    length: Number(m[3]),
    head: Buffer.from(m[4], "hex"),
    body: Buffer.from(m[5], "hex"),
    bodyHex: m[5],
  };
}

function keysOf(
  secrets: Uint8Array | readonly Uint8Array[],
): readonly Uint8Array[] {
  return secrets instanceof Uint8Array ? [secrets] : secrets;
}

/** Why a head does not verify; null when it does. */
export type HeadFault = "stale" | "other_node" | "bad_mac";

/**
 * Checks a signature's head before any body is read: fresh, for `target.node`, and its
 * MAC under one of `secrets` (the current one, and the previous one during a rotation).
 */
export function verifyHead(
  secrets: Uint8Array | readonly Uint8Array[],
  sig: CallSignature,
  target: CallTarget,
  now: number,
): HeadFault | null {
  if (Math.abs(now - sig.t) > MAX_SKEW_MS) return "stale";
  if (sig.node !== target.node) return "other_node";
  // Every key is tried, so the time taken does not say which one matched.
  let ok = false;
  for (const key of keysOf(secrets)) {
    if (timingSafeEqual(headMac(key, sig.t, target, sig.length), sig.head)) {
      ok = true;
    }
  }
  return ok ? null : "bad_mac";
}

/** Whether `body` (already read, `sig.length` bytes) is the one `sig` signed. */
export function verifyBody(
  secrets: Uint8Array | readonly Uint8Array[],
  sig: CallSignature,
  target: CallTarget,
  body: Uint8Array,
): boolean {
  if (body.byteLength !== sig.length) return false;
  let ok = false;
  for (const key of keysOf(secrets)) {
    if (timingSafeEqual(bodyMac(key, sig.t, target, body), sig.body)) ok = true;
  }
  return ok;
}

/** KV key of a taken signature (its body MAC). */
const replayKey = (bodyHex: string) => ["node_signatures", bodyHex] as const;

/**
 * True the first time any node offers `sig` (an atomic insert of its body MAC that
 * expires past the skew window, when the timestamp check alone refuses it); false for
 * a replay, on this node or another.
 */
export async function firstUse(
  deps: AppDeps,
  sig: CallSignature,
): Promise<boolean> {
  const key = replayKey(sig.bodyHex);
  const res = await kvTry(
    deps.kv.atomic().check({ key, versionstamp: null }).set(key, sig.t, {
      expireIn: 2 * MAX_SKEW_MS + 1_000,
    }).commit(),
  );
  return res.ok;
}
