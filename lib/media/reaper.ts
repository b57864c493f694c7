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
import {
  INSTANCE_STALE_MS,
  instanceKey,
  type InstanceRecord,
  type Presence,
  presenceKey,
} from "./presence.ts";

/** How often each instance runs the reaper. */
export const REAPER_INTERVAL_MS = 5_000;
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
    const holders = [
      ...new Set(presences.filter((p) => p?.attached).map((p) => p!.instance)),
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
      if (
        s.status === "created" &&
        now - s.created_at >= config.sessionConnectTimeoutS * 1000
      ) {
        const r = await moveSession(deps, id, {
          from: ["created"],
          to: "failed",
        });
        if (r.ok) result.failed.push(id);
      } else if (
        s.status === "activating" &&
        now - lastMoveAt(s) >= config.startTimeoutMs + GRACE_MS
      ) {
        const r = await moveSession(deps, id, {
          from: ["activating"],
          to: "failed",
        });
        if (r.ok) result.failed.push(id);
      } else if (
        s.status === "ending" &&
        now - lastMoveAt(s) >= config.endCleanupTimeoutMs + GRACE_MS
      ) {
        const r = await moveSession(deps, id, {
          from: ["ending"],
          to: "ended_with_warnings",
          patch: { warning: "cleanup did not complete" },
        });
        if (r.ok) result.ended.push(id);
      } else if (s.status === "active") {
        const warning = activeWarning(deps, s, presences[j], instances, now);
        if (warning && await endWithWarning(deps, id, warning)) {
          result.ended.push(id);
        }
      }
    }
  }
  return result;
}

function activeWarning(
  deps: AppDeps,
  s: SessionRecord,
  presence: Presence | null,
  instances: Map<string, InstanceRecord | null>,
  now: number,
): string | null {
  const { sessionMaxDurationS, sessionIdleTimeoutS } = deps.config;
  const started = s.started_at ?? s.created_at;
  if (now - started >= sessionMaxDurationS * 1000) {
    return `maximum session duration of ${sessionMaxDurationS} s reached`;
  }
  let detachedSince: number | null;
  if (!presence) {
    detachedSince = started;
  } else if (!presence.attached) {
    detachedSince = presence.since;
  } else if (presence.instance === deps.instanceId) {
    // Held here: attached is the truth, whatever the heartbeat says.
    detachedSince = null;
  } else {
    const holder = instances.get(presence.instance);
    const alive = holder && now - holder.heartbeat_at < INSTANCE_STALE_MS;
    detachedSince = alive ? null : (holder?.heartbeat_at ?? presence.since);
  }
  if (
    detachedSince !== null && now - detachedSince >= sessionIdleTimeoutS * 1000
  ) {
    return `idle timeout: no media connection for ${sessionIdleTimeoutS} s`;
  }
  return null;
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
  }, REAPER_INTERVAL_MS);
  deps.onClose.push(() => clearInterval(timer));
}
