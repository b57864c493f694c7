/**
 * The session handoff from the control plane to a media node (docs/protocols.md,
 * "Session handoff"). The control plane validates the create, claims its
 * `Idempotency-Key`, picks a node (./registry.ts) and POSTs the request to the node's
 * `/internal/v1/sessions`, signed (./signing.ts), with a deadline. The node does the start
 * work of DECISIONS 4 (capacity, provider pre-flight, SFU mountpoint, credentials into
 * its vault, the create commit that also completes the idempotency claim) and answers
 * 201 `{session_id}`, or the flat error body of what refused it, which the control plane
 * answers as its own. Credentials cross this one call and live in the node's memory
 * only; the control plane keeps none.
 */
import { z } from "zod";
import type { AppDeps, HandOffStart } from "../deps.ts";
import { ApiError, ERROR_CODES, type ErrorCode } from "../errors.ts";
import { TENANT_ID_PATTERN } from "../auth/api_keys.ts";
import {
  type IdempotencyClaim,
  idempotencyKey,
} from "../sessions/idempotency.ts";
import { isSessionId } from "../sessions/views.ts";
import { mediaNodes } from "./registry.ts";
import { SIGNATURE_HEADER, signCall } from "./signing.ts";

/** The node's handoff endpoint. */
export const HANDOFF_PATH = "/internal/v1/sessions";
/** The largest handoff body a node reads: a 64-KiB create body and its envelope. */
export const MAX_HANDOFF_BYTES = 128 * 1024;
/** Time past `START_TIMEOUT_MS` the control plane gives a node to answer. */
const ANSWER_GRACE_MS = 5_000;

const idempotencyRecordSchema = z.strictObject({
  fingerprint: z.string().min(1).max(200),
  state: z.literal("pending"),
  created_at: z.number().int(),
  expires_at: z.number().int(),
  pending_until: z.number().int(),
});

/** What the control plane sends. */
export const handoffSchema = z.strictObject({
  session_id: z.string().refine(isSessionId),
  tenant_id: z.string().regex(TENANT_ID_PATTERN),
  body: z.record(z.string(), z.unknown()),
  idempotency: z.strictObject({
    /** The `Idempotency-Key` header's value (the KV key is rebuilt from it). */
    key: z.string().regex(/^[\x20-\x7e]{1,255}$/),
    versionstamp: z.string().regex(/^[0-9a-f]{20}$/),
    record: idempotencyRecordSchema,
  }).optional(),
});
export type Handoff = z.infer<typeof handoffSchema>;

/** A node's answers. */
const createdSchema = z.object({ session_id: z.string() });
const errorSchema = z.object({
  code: z.string().refine((c) => Object.hasOwn(ERROR_CODES, c)),
  message: z.string().max(1000),
  param: z.string().max(300).optional(),
  retry_after: z.number().optional(),
});

/** The idempotency claim as the wire carries it (`header`: the key's value). */
function claimOnWire(
  claim: NonNullable<HandOffStart["claim"]>,
  header: string,
): Handoff["idempotency"] {
  return {
    key: header,
    versionstamp: claim.versionstamp,
    record: {
      fingerprint: claim.record.fingerprint,
      state: "pending",
      created_at: claim.record.created_at,
      expires_at: claim.record.expires_at,
      pending_until: claim.record.pending_until,
    },
  };
}

/**
 * The claim a node completes in its create commit, its KV key rebuilt from the tenant
 * and the header's value: a handoff can only ever complete that tenant's claim.
 */
export function claimFromWire(
  tenantId: string,
  wire: NonNullable<Handoff["idempotency"]>,
): IdempotencyClaim {
  return {
    key: idempotencyKey(tenantId, wire.key),
    versionstamp: wire.versionstamp,
    record: wire.record,
  };
}

function noNode(): ApiError {
  return new ApiError(
    "AVTR_RENDER_CAPACITY",
    "No media node can take a session right now",
    { retryAfter: 5 },
  );
}

/**
 * Control plane: hands the create to a media node, trying the next one when a node is
 * full, refuses for now (any 429 or 503) or cannot be reached. Resolves with the session
 * id the node committed; throws a node's other refusals as they are, the last node's
 * 429/503 when every node refused (503 `AVTR_RENDER_CAPACITY` when none took it, or a
 * node's refusal was its own rate window), 504
 * `AVTR_RENDER_TIMEOUT` when a node did not answer in time (it may still have committed:
 * no other node is tried, so the session cannot be made twice).
 */
export async function handOffCreate(
  deps: AppDeps,
  request: HandOffStart,
): Promise<string> {
  const secret = deps.config.nodeSecret;
  if (!secret) throw new Error("handoff without NODE_SECRET");
  const payload: Handoff = {
    session_id: request.sessionId,
    tenant_id: request.tenantId,
    body: request.body,
    ...(request.claim && request.idempotencyKey !== undefined
      ? { idempotency: claimOnWire(request.claim, request.idempotencyKey) }
      : {}),
  };
  const bytes = new TextEncoder().encode(JSON.stringify(payload));
  let refusal: ApiError = noNode();
  try {
    for (const node of await mediaNodes(deps)) {
      const deadline = deps.config.startTimeoutMs + ANSWER_GRACE_MS;
      let res: Response;
      try {
        res = await fetch(node.url + HANDOFF_PATH, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            [SIGNATURE_HEADER]: signCall(
              secret,
              { method: "POST", path: HANDOFF_PATH, node: node.id },
              bytes,
              deps.now(),
            ),
          },
          body: bytes,
          signal: AbortSignal.timeout(deadline),
          redirect: "error",
        });
      } catch (err) {
        if (err instanceof DOMException && err.name === "TimeoutError") {
          throw new ApiError(
            "AVTR_RENDER_TIMEOUT",
            "The media node did not answer in time",
            { cause: err },
          );
        }
        // Not reached (refused, reset, DNS): nothing was started there.
        deps.log.warn("media node unreachable; trying the next", {
          node: node.id,
          err,
        });
        continue;
      }
      const answer = await readAnswer(res, request.sessionId);
      if (answer.ok) return answer.sessionId;
      if (res.status === 429 || res.status === 503) {
        // Full, or refusing for now: another node may take it. A node's own rate
        // window counts its callers (the control plane), never the tenant.
        if (answer.error.code !== "AVTR_RATE_LIMIT_EXCEEDED") {
          refusal = answer.error;
        }
        continue;
      }
      if (res.status === 401 || res.status === 404) {
        // A node that refuses the signature, or runs in another role, is misconfigured.
        deps.log.error("media node refused the handoff", {
          node: node.id,
          status: res.status,
          code: answer.error.code,
        });
        continue;
      }
      throw answer.error;
    }
  } finally {
    bytes.fill(0);
  }
  throw refusal;
}

/** A node's answer: the committed session id, or its error as an `ApiError`. */
async function readAnswer(
  res: Response,
  sessionId: string,
): Promise<{ ok: true; sessionId: string } | { ok: false; error: ApiError }> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (res.status === 201) {
    const created = createdSchema.safeParse(body);
    if (created.success && created.data.session_id === sessionId) {
      return { ok: true, sessionId };
    }
  } else {
    const err = errorSchema.safeParse(body);
    if (err.success) {
      const code = err.data.code as ErrorCode;
      return {
        ok: false,
        error: new ApiError(code, err.data.message, {
          param: err.data.param,
          retryAfter: err.data.retry_after,
        }),
      };
    }
  }
  return {
    ok: false,
    error: new ApiError(
      "AVTR_RENDER_FAILED",
      "The media node answered the handoff unexpectedly",
    ),
  };
}
