/**
 * Ending a session (SPEC 3, 4.3): `active` → `ending` (one checked commit, so of two
 * concurrent ends exactly one proceeds) → the live side is torn down through
 * `deps.runtime.endLive` within `END_CLEANUP_TIMEOUT_MS` → `ended`, or
 * `ended_with_warnings` with the runtime's warning.
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import type {
  EndReason,
  EndSessionResponse,
  SessionStatus,
} from "../api/schemas.ts";
import type { EndLiveResult } from "../runtime.ts";
import { kvTry } from "../kv/store.ts";
import {
  isTerminal,
  moveSession,
  sessionKey,
  type SessionRecord,
} from "./store.ts";
import { ownedSession, sessionNotFound, toEndResponse } from "./views.ts";

/** Extra time granted to the runtime past its own timeout before we stop waiting. */
const END_LIVE_GRACE_MS = 2000;

/** The 409 for an end against a session in `status` (SPEC 4.3). */
export function endConflict(status: SessionStatus): ApiError {
  if (status === "ended" || status === "ended_with_warnings") {
    return new ApiError("AVTR_SESSION_ENDED", "Session has already ended");
  }
  return new ApiError(
    "AVTR_SESSION_CONFLICT",
    `Session cannot be ended while it is ${status}`,
  );
}

/** Calls the runtime, turning a rejection or a stall into a warning. */
async function endLive(
  deps: AppDeps,
  id: string,
  force: boolean,
): Promise<EndLiveResult> {
  const timeoutMs = deps.config.endCleanupTimeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stall = new Promise<EndLiveResult>((resolve) => {
    timer = setTimeout(() =>
      resolve({
        warning: "Media cleanup did not finish in time",
        chunksRendered: 0,
      }), timeoutMs + END_LIVE_GRACE_MS);
  });
  try {
    return await Promise.race([
      deps.runtime.endLive(id, { force, timeoutMs }),
      stall,
    ]);
  } catch (err) {
    deps.log.error("session cleanup failed", { session_id: id, err });
    return { warning: "Media cleanup failed", chunksRendered: 0 };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Tears down the live side of an `ending` session and moves it to `ended`, or to
 * `ended_with_warnings` when cleanup (or `warning`) reports a problem, keeping the
 * `end_reason` recorded with the move into `ending`.
 */
async function finishEnd(
  deps: AppDeps,
  ending: SessionRecord,
  force: boolean,
  reason: EndReason,
  warning?: string,
): Promise<SessionRecord> {
  const id = ending.session_id;
  const live = await endLive(deps, id, force);
  const warnings = [warning, live.warning].filter(Boolean).join("; ");
  const done = await moveSession(deps, id, {
    from: ["ending"],
    to: warnings ? "ended_with_warnings" : "ended",
    reason,
    patch: {
      chunks_rendered: Math.max(0, Math.floor(live.chunksRendered)),
      ...(warnings ? { warning: warnings } : {}),
    },
  });
  if (done.ok) return done.session;
  if (done.session && isTerminal(done.session.status)) {
    // Something else (the reaper) finished the move meanwhile: report its outcome.
    return done.session;
  }
  throw new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "Session state could not be updated, read the session status",
  );
}

/**
 * Ends an `active` session on the service's own initiative (idle or maximum duration
 * reached, the engine ended or failed, the renderer failed) through the same path as
 * the end call, recording `reason`. With a `warning` it ends as `ended_with_warnings`;
 * without one (the engine ended the conversation) as `ended` unless cleanup reports a
 * problem. Resolves true when this call ended it, false when the session was not
 * `active` (absent, already ending or ended).
 */
export async function endWithWarning(
  deps: AppDeps,
  id: string,
  reason: EndReason,
  warning: string | undefined,
  options: { force?: boolean } = {},
): Promise<boolean> {
  const toEnding = await moveSession(deps, id, {
    from: ["active"],
    to: "ending",
    reason,
  });
  if (!toEnding.ok) return false;
  const final = await finishEnd(
    deps,
    toEnding.session,
    options.force ?? false,
    reason,
    warning,
  );
  deps.log.info("session ended by the service", {
    session_id: id,
    tenant: final.tenant_id,
    status: final.status,
    end_reason: final.end_reason,
    warning,
  });
  return true;
}

/**
 * Ends session `id` of `tenantId`. `entry` is the session's entry when already read
 * (prefetched with authentication). Throws 404 `AVTR_SESSION_NOT_FOUND`, 409
 * `AVTR_SESSION_ENDED` / `AVTR_SESSION_CONFLICT`, or 503 when the store is down.
 */
export async function endSession(
  deps: AppDeps,
  tenantId: string,
  id: string,
  options: { force: boolean; entry?: Deno.KvEntryMaybe<unknown> },
): Promise<EndSessionResponse> {
  const entry = options.entry ?? await kvTry(deps.kv.get(sessionKey(id)));
  const rec = ownedSession(deps, tenantId, entry);
  if (rec.status !== "active") throw endConflict(rec.status);
  const reason: EndReason = options.force ? "forced" : "requested";
  const toEnding = await moveSession(deps, id, {
    from: ["active"],
    to: "ending",
    reason,
    entry,
  });
  if (!toEnding.ok) {
    const rec = toEnding.session;
    if (!rec || rec.tenant_id !== tenantId) throw sessionNotFound();
    throw endConflict(rec.status);
  }

  const final = await finishEnd(deps, toEnding.session, options.force, reason);
  deps.log.info("session ended", {
    session_id: id,
    tenant: tenantId,
    status: final.status,
    force: options.force,
  });
  return toEndResponse(final);
}
