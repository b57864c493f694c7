/**
 * Session metrics (DECISIONS 10) from the session record's own transitions: each
 * record this instance commits into existence or into a terminal state is counted once
 * (an `afterCommit` hook, lib/sessions/store.ts), so every instance of a split counts
 * what it committed. Labels come from the record's bounded fields only.
 */
import type { AppDeps } from "../deps.ts";
import { isTerminal, type SessionRecord } from "./store.ts";

/** `builtin` or `photo`: the avatar's kind, never its id. */
export function avatarKind(avatarId: string): "builtin" | "photo" {
  return avatarId.startsWith("ph_") ? "photo" : "builtin";
}

/** Registers the hook that counts creates and ends into `deps.metrics`. */
export function countSessions(
  deps: Pick<AppDeps, "metrics" | "sessionHooks" | "config">,
): void {
  const m = deps.metrics;
  deps.sessionHooks.afterCommit.push((before, after) => {
    const was = before as SessionRecord | null, rec = after as SessionRecord;
    const tenant = deps.config.metricsTenantLabel ? rec.tenant_id : "";
    const kind = avatarKind(rec.avatar_id);
    if (was === null) {
      m.sessionsCreated.inc({
        transport: rec.transport,
        avatar_kind: kind,
        provider: rec.provider_type,
        tenant,
      });
    }
    if (isTerminal(rec.status) && (was === null || !isTerminal(was.status))) {
      m.sessionsEnded.inc({
        reason: rec.end_reason ?? "",
        status: rec.status,
        transport: rec.transport,
        avatar_kind: kind,
        provider: rec.provider_type,
        tenant,
      });
      if (rec.duration_s !== undefined) {
        m.sessionDuration.observe(
          { transport: rec.transport, avatar_kind: kind },
          rec.duration_s,
        );
      }
    }
  });
}
