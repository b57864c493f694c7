/**
 * Media node side of the session handoff (./handoff.ts): `POST /internal/v1/sessions`,
 * answered only by a node (`SERVICE_ROLE=media`; elsewhere the path does not exist).
 * Everything that can be refused without the body is, before a byte of it is read: a
 * missing, malformed, stale or mis-signed signature head (./signing.ts), one made for
 * another node, a missing or oversized `Content-Length`. Only then is the body read
 * (bounded by its signed length, a short deadline, and at most `MAX_BODY_READS` at
 * once), its MAC checked, and the signature taken once across every node (KV). Each
 * call that fails, 408 and 413 included, counts against its address's rate-limit
 * window as it is refused (DECISIONS 9); once that is spent, failures answer 429. A
 * call that verifies is never counted nor refused for its address: behind a proxy the
 * control plane shares its address with everyone.
 */
import type { AppDeps } from "../deps.ts";
import { readBodyBytes } from "../api/body.ts";
import { ApiError } from "../errors.ts";
import { type Ctx, json } from "../api/http.ts";
import { rateLimitExceeded } from "../api/rate_charge.ts";
import { rateLimiterOf } from "../api/rate_limit.ts";
import { parseCreateSession } from "../api/schemas.ts";
import { startSession } from "../sessions/create.ts";
import {
  claimFromWire,
  HANDOFF_PATH,
  handoffSchema,
  MAX_HANDOFF_BYTES,
} from "./handoff.ts";
import {
  type CallTarget,
  firstUse,
  parseSignature,
  SIGNATURE_HEADER,
  verifyBody,
  verifyHead,
} from "./signing.ts";

/** Handoff bodies read at once on a node; past it, 503 without reading. */
export const MAX_BODY_READS = 16;
/** Deadline of a handoff body: the control plane sends it whole, at once. */
export const HANDOFF_BODY_TIMEOUT_MS = 5_000;

const reading = new WeakMap<AppDeps, { n: number }>();

function readsOf(deps: AppDeps): { n: number } {
  let r = reading.get(deps);
  if (!r) reading.set(deps, r = { n: 0 });
  return r;
}

/** Answers a handoff: 201 `{session_id}`, or the error that refused the start. */
export async function acceptHandoff(ctx: Ctx): Promise<Response> {
  const deps = ctx.deps;
  const secret = deps.config.nodeSecret;
  if (deps.config.role !== "media" || !secret) {
    throw new ApiError("AVTR_NOT_FOUND", "No route matches this path");
  }
  const secrets = deps.config.nodeSecretPrevious
    ? [secret, deps.config.nodeSecretPrevious]
    : secret;
  const limiter = rateLimiterOf(deps);
  /** A failed call: counted against its address now; 429 once that window is spent. */
  const refuse = (err: ApiError, why: string): never => {
    deps.log.warn("handoff refused", { why, request_id: ctx.state.requestId });
    const d = limiter.take(limiter.addressSubject(ctx.remoteAddr));
    throw d.allowed ? err : rateLimitExceeded(d);
  };
  const unsigned = (why: string) =>
    refuse(
      new ApiError(
        "AVTR_AUTH_INVALID_KEY",
        "The handoff signature does not verify",
      ),
      why,
    );
  const target: CallTarget = {
    method: "POST",
    path: HANDOFF_PATH,
    node: deps.instanceId,
  };
  const sig = parseSignature(ctx.req.headers.get(SIGNATURE_HEADER));
  if (!sig) return unsigned("no signature");
  const declared = ctx.req.headers.get("content-length");
  if (declared === null || !/^\d{1,10}$/.test(declared)) {
    return refuse(
      new ApiError("AVTR_REQUEST_INVALID", "Content-Length is required"),
      "no content-length",
    );
  }
  if (Number(declared) > MAX_HANDOFF_BYTES) {
    return refuse(
      new ApiError("AVTR_REQUEST_TOO_LARGE", "The handoff is too large"),
      "too large",
    );
  }
  const fault = verifyHead(secrets, sig, target, deps.now());
  if (fault) return unsigned(fault);
  if (sig.length !== Number(declared)) return unsigned("length");
  const reads = readsOf(deps);
  if (reads.n >= MAX_BODY_READS) {
    // Not the caller's fault (its head verified): the control plane tries another node.
    throw new ApiError("AVTR_RENDER_CAPACITY", "Too many handoffs at once", {
      retryAfter: 1,
    });
  }
  reads.n++;
  let bytes: Uint8Array;
  try {
    bytes = await readBodyBytes(
      ctx.req,
      sig.length,
      Math.min(HANDOFF_BODY_TIMEOUT_MS, deps.config.requestBodyTimeoutMs),
    );
  } catch (err) {
    if (err instanceof ApiError) return refuse(err, "body");
    throw err;
  } finally {
    reads.n--;
  }
  try {
    if (!verifyBody(secrets, sig, target, bytes)) return unsigned("body mac");
    if (!await firstUse(deps, sig)) return unsigned("replayed");
    return await startHandedOff(deps, bytes);
  } finally {
    bytes.fill(0);
  }
}

/** The start work of a verified handoff. */
async function startHandedOff(
  deps: AppDeps,
  bytes: Uint8Array,
): Promise<Response> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    value = undefined;
  }
  const handoff = handoffSchema.safeParse(value);
  if (!handoff.success) {
    throw new ApiError("AVTR_REQUEST_INVALID", "The handoff is malformed");
  }
  const { session_id, tenant_id, body, idempotency } = handoff.data;
  const record = await startSession(deps, {
    tenantId: tenant_id,
    input: parseCreateSession(body),
    sessionId: session_id,
    claim: idempotency ? claimFromWire(tenant_id, idempotency) : undefined,
  });
  deps.log.info("session handed off to this node", {
    session_id: record.session_id,
    tenant: tenant_id,
  });
  return json({ session_id: record.session_id }, 201, {
    "cache-control": "no-store",
  });
}
