/**
 * `Idempotency-Key` for session creation (DECISIONS 4). Per tenant, kept 24 h. A key is
 * claimed (`pending`) by the first request and turned `done` in the same commit that
 * stores the session; a duplicate with the same body replays that session, one with
 * another body gets 422, one arriving while the first is in flight waits for it.
 * Bodies hold credentials, so only an HMAC fingerprint of a canonical form is stored.
 */
import { createHmac } from "node:crypto";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { base64url } from "../ids.ts";
import { type KvBudget, kvTry } from "../kv/store.ts";
import { deriveKey } from "../auth/tokens.ts";

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How often a waiting duplicate re-reads the claim. */
export const IDEMPOTENCY_POLL_MS = 25;
/** Past the start timeout plus this, a `pending` claim counts as abandoned. */
const ABANDON_GRACE_MS = 30_000;

export interface IdempotencyRecord {
  fingerprint: string;
  state: "pending" | "done";
  session_id?: string;
  created_at: number;
  /** Epoch ms; also the entry's `expireIn`. */
  expires_at: number;
  /** A `pending` claim older than this was abandoned (its instance died). */
  pending_until: number;
}

export interface IdempotencyClaim {
  key: Deno.KvKey;
  versionstamp: string;
  record: IdempotencyRecord;
}

export type IdempotencyBegin =
  | { kind: "replay"; sessionId: string }
  | { kind: "claimed"; claim: IdempotencyClaim };

export function idempotencyKey(tenantId: string, key: string): Deno.KvKey {
  return ["idempotency", tenantId, key];
}

/**
 * The `Idempotency-Key` header's value, undefined when absent; throws 400
 * `AVTR_REQUEST_INVALID` (param `Idempotency-Key`) unless it is 1..255 printable ASCII.
 */
export function parseIdempotencyKey(header: string | null): string | undefined {
  if (header === null) return undefined;
  if (!/^[\x20-\x7e]{1,255}$/.test(header)) {
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "Idempotency-Key must be 1 to 255 printable ASCII characters",
      { param: "Idempotency-Key" },
    );
  }
  return header;
}

/** JSON with object keys sorted at every level, so equal bodies serialize equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    return `{${
      Object.keys(obj).sort().map((k) =>
        `${JSON.stringify(k)}:${canonicalJson(obj[k])}`
      ).join(",")
    }}`;
  }
  return JSON.stringify(value);
}

/** HMAC-SHA256 of the canonical body under a key derived from the token secret. */
export function fingerprintBody(deps: AppDeps, body: unknown): string {
  const key = deriveKey(deps, "idempotency-fingerprint-v1");
  return base64url(
    new Uint8Array(
      createHmac("sha256", key).update(canonicalJson(body)).digest(),
    ),
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Claims `key` for `tenantId`, or tells the caller to replay the session of an earlier
 * request with the same `fingerprint`. Throws 422 `AVTR_IDEMPOTENCY_MISMATCH` for
 * another body, and 503 `AVTR_SESSION_STATE_UNAVAILABLE` when an in-flight first
 * attempt has not finished within the start timeout, or when its store time (`budget`,
 * the request's, else `KV_TIMEOUT_MS` an operation) runs out.
 */
export async function beginIdempotent(
  deps: AppDeps,
  tenantId: string,
  key: string,
  fingerprint: string,
  budget?: KvBudget,
): Promise<IdempotencyBegin> {
  const kvKey = idempotencyKey(tenantId, key);
  const waitUntil = performance.now() + deps.config.startTimeoutMs + 1000;
  let announced = false;
  while (true) {
    const entry = await kvTry(
      () => deps.kv.get<IdempotencyRecord>(kvKey),
      budget,
    );
    const now = deps.now();
    const rec = entry.value && entry.value.expires_at > now
      ? entry.value
      : null;
    if (rec && (rec.state === "done" || rec.pending_until > now)) {
      if (rec.fingerprint !== fingerprint) {
        throw new ApiError(
          "AVTR_IDEMPOTENCY_MISMATCH",
          "Idempotency-Key was already used with a different request body",
        );
      }
      if (rec.state === "done" && rec.session_id) {
        return { kind: "replay", sessionId: rec.session_id };
      }
      if (performance.now() >= waitUntil) {
        throw new ApiError(
          "AVTR_SESSION_STATE_UNAVAILABLE",
          "An earlier request with this Idempotency-Key is still in progress",
          { retryAfter: 5 },
        );
      }
      if (!announced) {
        announced = true;
        deps.log.debug("idempotent request waits for its first attempt", {
          tenant: tenantId,
        });
      }
      await sleep(IDEMPOTENCY_POLL_MS);
      continue;
    }
    const record: IdempotencyRecord = {
      fingerprint,
      state: "pending",
      created_at: now,
      expires_at: now + IDEMPOTENCY_TTL_MS,
      pending_until: now + deps.config.startTimeoutMs + ABANDON_GRACE_MS,
    };
    let pending: Promise<Deno.KvCommitResult | Deno.KvCommitError> | undefined;
    let res: Deno.KvCommitResult | Deno.KvCommitError;
    try {
      res = await kvTry(
        () =>
          pending = deps.kv.atomic().check(entry).set(kvKey, record, {
            expireIn: IDEMPOTENCY_TTL_MS,
          }).commit(),
        budget,
      );
    } catch (err) {
      // A claim the store took after this request was answered 503 would hold the key
      // until `pending_until`: free it.
      pending?.then((late) => {
        if (!late.ok) return;
        releaseIdempotent(deps, {
          key: kvKey,
          versionstamp: late.versionstamp,
          record,
        });
      }, () => undefined);
      throw err;
    }
    if (res.ok) {
      return {
        kind: "claimed",
        claim: { key: kvKey, versionstamp: res.versionstamp, record },
      };
    }
  }
}

/** Adds to `op` the move of `claim` to `done` for `sessionId` (the create commit). */
export function completeIdempotent(
  deps: AppDeps,
  op: Deno.AtomicOperation,
  claim: IdempotencyClaim,
  sessionId: string,
): void {
  const rec: IdempotencyRecord = {
    ...claim.record,
    state: "done",
    session_id: sessionId,
  };
  op.set(claim.key, rec, {
    expireIn: Math.max(1, rec.expires_at - deps.now()),
  });
}

/**
 * Frees a claim whose request failed, so a retry starts afresh. Waits for the store at
 * most what is left of `budget` (the request's): a release the store cannot take now
 * goes on in the background, so a request out of store time answers at once. Never
 * throws.
 */
export async function releaseIdempotent(
  deps: AppDeps,
  claim: IdempotencyClaim,
  budget?: KvBudget,
): Promise<void> {
  try {
    await kvTry(
      deps.kv.atomic().check({
        key: claim.key,
        versionstamp: claim.versionstamp,
      })
        .delete(claim.key).commit(),
      budget,
    );
  } catch (err) {
    deps.log.warn("idempotency claim not released", { err });
  }
}
