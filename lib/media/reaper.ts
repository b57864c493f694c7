/**
 * The reaper: moves sessions whose time is up (DECISIONS 4). Safe with several instances
 * on one store: every move is versionstamp-checked, so only one instance makes it; the
 * holder of the live media learns of it through its hub (after-commit hook or poll).
 */
import type { AppDeps } from "../deps.ts";
import {
  endWithWarning,
  moveSession,
  type SessionRecord,
} from "../sessions.ts";
import { kvTry } from "../kv/store.ts";
import type { EndReason } from "../api/schemas.ts";
import {
  heartbeatFresh,
  instanceKey,
  type InstanceRecord,
  instanceStaleMs,
  type Presence,
  presenceKey,
} from "./presence.ts";

/** How often each instance runs the reaper (more often with a shorter heartbeat). */
export const REAPER_INTERVAL_MS = 5_000;

/** The warning of a session whose holder stopped while it was `active`. */
export const INSTANCE_LOST_WARNING =
  "the instance holding the session stopped: its engine connection and renderer are gone";
/** Extra time past a bound before the reaper steps in for a holder that should have. */
const GRACE_MS = 30_000;

export interface ReapResult {
  failed: string[];
  ended: string[];
}

function lastMoveAt(s: SessionRecord): number {
  return s.timeline.at(-1)?.at ?? s.created_at;
}

/** One pass over the open sessions. Returns the ids it moved. */
export async function reapOnce(deps: AppDeps): Promise<ReapResult> {
  const { config, kv } = deps;
  const now = deps.now();
  const result: ReapResult = { failed: [], ended: [] };
  const ids: string[] = [];
  for await (const e of kv.list<string>({ prefix: ["sessions_open"] })) {
    ids.push(String(e.key[1]));
  }

  for (let i = 0; i < ids.length; i += 5) {
    const batch = ids.slice(i, i + 5);
    const entries = await kvTry(
      kv.getMany(
        batch.flatMap((
          id,
        ) => [["sessions", id], presenceKey(id)]) as Deno.KvKey[],
      ),
    );
    const presences = batch.map((_, j) =>
      entries[2 * j + 1].value as Presence | null
    );
    const owners = batch.map((_, j) =>
      (entries[2 * j].value as SessionRecord | null)?.owner
    );
    const holders = [
      ...new Set([
        ...presences.filter((p) => p?.attached).map((p) => p!.instance),
        ...owners.filter((o): o is string => typeof o === "string"),
      ]),
    ];
    const instances = new Map<string, InstanceRecord | null>();
    for (let h = 0; h < holders.length; h += 10) {
      const part = holders.slice(h, h + 10);
      const recs = await kvTry(
        kv.getMany(part.map(instanceKey) as Deno.KvKey[]),
      );
      part.forEach((id, k) =>
        instances.set(id, recs[k].value as InstanceRecord | null)
      );
    }

    for (let j = 0; j < batch.length; j++) {
      const s = entries[2 * j].value as SessionRecord | null;
      if (!s) continue;
      const id = s.session_id;
      // The holder stopped: the credentials were in its memory only, so nothing can run
      // the session again. (A move younger than the staleness is left alone: its holder
      // may not have written its first heartbeat yet.)
      const lost = !isAlive(deps, s.owner, instances, now) &&
        now - lastMoveAt(s) >= instanceStaleMs(config);
      if (
        s.status === "created" &&
        now - s.created_at >= config.sessionConnectTimeoutS * 1000
      ) {
        const r = await moveSession(deps, id, {
          from: ["created"],
          to: "failed",
          reason: "connect_timeout",
        });
        if (r.ok) result.failed.push(id);
      } else if (
        lost && (s.status === "created" || s.status === "activating")
      ) {
        const r = await moveSession(deps, id, {
          from: ["created", "activating"],
          to: "failed",
          reason: "instance_lost",
        });
        if (r.ok) result.failed.push(id);
      } else if (lost && s.status === "active") {
        // Nothing is left to tear down: the move is made here, without the end call's
        // wait for a holder that cannot answer.
        // It ended when its holder was last heard of: usage counts up to then.
        const r = await moveSession(deps, id, {
          from: ["active"],
          to: "ended_with_warnings",
          reason: "instance_lost",
          patch: { warning: INSTANCE_LOST_WARNING },
          at: instances.get(s.owner)?.heartbeat_at,
        });
        if (r.ok) result.ended.push(id);
      } else if (
        s.status === "activating" &&
        now - lastMoveAt(s) >= config.startTimeoutMs + GRACE_MS
      ) {
        // The holder fails a start that times out itself; past the grace it is gone
        // (instance_lost) or stuck (start_failed).
        const r = await moveSession(deps, id, {
          from: ["activating"],
          to: "failed",
          reason: isAlive(deps, s.owner, instances, now)
            ? "start_failed"
            : "instance_lost",
        });
        if (r.ok) result.failed.push(id);
      } else if (
        s.status === "ending" &&
        now - lastMoveAt(s) >= config.endCleanupTimeoutMs + GRACE_MS
      ) {
        // The instance finishing the end went away: keep the reason of that end.
        const r = await moveSession(deps, id, {
          from: ["ending"],
          to: "ended_with_warnings",
          reason: (b) => b.end_reason ?? "instance_lost",
          patch: { warning: "cleanup did not complete" },
        });
        if (r.ok) result.ended.push(id);
      } else if (s.status === "active") {
        const end = activeEnd(deps, s, presences[j], instances, now);
        if (end && await endWithWarning(deps, id, end.reason, end.warning)) {
          result.ended.push(id);
        }
      }
    }
  }
  return result;
}

/** Whether `instance` is this one or has a fresh heartbeat among `instances`. */
function isAlive(
  deps: AppDeps,
  instance: string,
  instances: Map<string, InstanceRecord | null>,
  now: number,
): boolean {
  if (instance === deps.instanceId) return true;
  return heartbeatFresh(deps, instances.get(instance), now);
}

/** Why an `active` session ends now, and the warning it ends with; null: not yet. */
function activeEnd(
  deps: AppDeps,
  s: SessionRecord,
  presence: Presence | null,
  instances: Map<string, InstanceRecord | null>,
  now: number,
): { reason: EndReason; warning: string } | null {
  const { sessionMaxDurationS, sessionIdleTimeoutS } = deps.config;
  const started = s.started_at ?? s.created_at;
  if (now - started >= sessionMaxDurationS * 1000) {
    return {
      reason: "max_duration",
      warning: `maximum session duration of ${sessionMaxDurationS} s reached`,
    };
  }
  let detachedSince: number | null;
  let lost = false;
  if (!presence) {
    detachedSince = started;
  } else if (!presence.attached) {
    detachedSince = presence.since;
  } else if (isAlive(deps, presence.instance, instances, now)) {
    // Held here (attached is the truth, whatever the heartbeat says) or by a live peer.
    detachedSince = null;
  } else {
    lost = true;
    detachedSince = instances.get(presence.instance)?.heartbeat_at ??
      presence.since;
  }
  if (
    detachedSince === null || now - detachedSince < sessionIdleTimeoutS * 1000
  ) {
    return null;
  }
  return lost
    ? {
      reason: "instance_lost",
      warning:
        `the instance holding the live media stopped; no media connection for ${sessionIdleTimeoutS} s`,
    }
    : {
      reason: "idle_timeout",
      warning: `idle timeout: no media connection for ${sessionIdleTimeoutS} s`,
    };
}

/** Runs `reapOnce` every `REAPER_INTERVAL_MS` until the app closes. */
export function startReaper(deps: AppDeps): void {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      await reapOnce(deps);
    } catch (err) {
      deps.log.warn("reaper pass failed", { err });
    } finally {
      running = false;
    }
  }, Math.min(REAPER_INTERVAL_MS, deps.config.heartbeatMs));
  deps.onClose.push(() => clearInterval(timer));
}
