/**
 * Media node side of the session handoff (./handoff.ts): `POST /internal/v1/sessions`,
 * answered only by a node (`SERVICE_ROLE=media`; elsewhere the path does not exist).
 * The signature is checked on the raw bytes before anything is parsed; then the
 * envelope and the create body are parsed by their schemas, and the start work runs
 * here, so this node owns the session and holds its credentials. Calls that fail the
 * signature count against their address's rate-limit window (DECISIONS 9, shared with
 * its unverified `/v1/` requests); once it is spent, the address gets 429 before its
 * body is read. Signed calls are never counted.
 */
import type { AppDeps } from "../deps.ts";
import { readBodyBytes } from "../api/body.ts";
import { ApiError } from "../api/errors.ts";
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
import { ReplayGuard, SIGNATURE_HEADER, verifyCall } from "./signing.ts";

const guards = new WeakMap<AppDeps, ReplayGuard>();

function replayGuardOf(deps: AppDeps): ReplayGuard {
  let guard = guards.get(deps);
  if (!guard) guards.set(deps, guard = new ReplayGuard());
  return guard;
}

/** Answers a handoff: 201 `{session_id}`, or the error that refused the start. */
export async function acceptHandoff(ctx: Ctx): Promise<Response> {
  const deps = ctx.deps;
  const secret = deps.config.nodeSecret;
  if (deps.config.role !== "media" || !secret) {
    throw new ApiError("AVTR_NOT_FOUND", "No route matches this path");
  }
  const limiter = rateLimiterOf(deps);
  const address = limiter.addressSubject(ctx.remoteAddr);
  const spent = limiter.peek(address);
  if (!spent.allowed) throw rateLimitExceeded(spent);
  const bytes = await readBodyBytes(
    ctx.req,
    MAX_HANDOFF_BYTES,
    deps.config.requestBodyTimeoutMs,
  );
  try {
    const signed = verifyCall(
      deps.config.nodeSecretPrevious
        ? [secret, deps.config.nodeSecretPrevious]
        : secret,
      ctx.req.headers.get(SIGNATURE_HEADER),
      "POST",
      HANDOFF_PATH,
      bytes,
      deps.now(),
      replayGuardOf(deps),
    );
    if (!signed) {
      deps.log.warn("handoff refused: the signature does not verify", {
        request_id: ctx.state.requestId,
      });
      const d = limiter.take(address);
      if (!d.allowed) throw rateLimitExceeded(d);
      throw new ApiError(
        "AVTR_AUTH_INVALID_KEY",
        "The handoff signature does not verify",
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(
        new TextDecoder("utf-8", { fatal: true }).decode(bytes),
      );
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
  } finally {
    bytes.fill(0);
  }
}
