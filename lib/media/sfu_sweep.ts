/**
 * The mountpoint sweep (DECISIONS 11): at start and every `SWEEP_INTERVAL_MS`, each
 * instance with an SFU destroys the mountpoints on it whose session is gone or
 * terminal, whose holder is dead (no fresh heartbeat, or a killed process this one
 * replaced at the same address), or that have no record at all; and it destroys a
 * session's mountpoint when the session turns terminal. Only records of this
 * instance's SFU lead to an SFU call (lib/sfu/mountpoints.ts).
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import {
  heartbeatFresh,
  instanceKey,
  type InstanceRecord,
} from "./presence.ts";
import {
  isTerminal,
  recordOf,
  sessionKey,
  type SessionRecord,
} from "../sessions/store.ts";
import {
  closeMountpoint,
  liveOf,
  mountpointKey,
  type MountpointRecord,
  onThisSfu,
} from "../sfu/mountpoints.ts";
import { lastSfuHealth, sfuHealthy } from "../sfu/health.ts";

/** How often each instance sweeps leftover mountpoints. */
export const SWEEP_INTERVAL_MS = 10_000;
/** A record still without a mountpoint id this long after creation is abandoned. */
const PENDING_MS = 60_000;

/**
 * Whether instance `id` (record `rec`) is alive: a fresh heartbeat, and not an earlier
 * process at this instance's own address (two live processes cannot listen on one
 * address: that one was killed and this one restarted in its place).
 */
function alive(
  deps: AppDeps,
  id: string,
  rec: InstanceRecord | null,
  now: number,
): boolean {
  if (id === deps.instanceId) return true;
  if (!heartbeatFresh(deps, rec, now)) return false;
  return !(deps.instanceUrl !== undefined && rec.url === deps.instanceUrl);
}

export interface SweepResult {
  /** Mountpoint ids destroyed on this instance's SFU. */
  destroyed: number[];
  /** Sessions whose record of another SFU was deleted (its holder is dead). */
  forgotten: string[];
}

/**
 * Deletes the record of another SFU's mountpoint whose holder is dead, with no SFU
 * call: that Janus went with its node, or an instance now on it destroys the mountpoint
 * as one with no record. True when deleted.
 */
async function forgetForeign(
  deps: AppDeps,
  entry: Deno.KvEntry<MountpointRecord>,
): Promise<boolean> {
  const id = entry.value.session_id;
  try {
    const res = await kvTry(
      deps.kv.atomic().check(entry).delete(mountpointKey(id)).commit(),
    );
    return res.ok;
  } catch (err) {
    deps.log.warn("sfu sweep: record not deleted", { session_id: id, err });
    return false;
  }
}

/**
 * One sweep: destroys the mountpoints of sessions that are gone or terminal, of dead
 * holders, and those the SFU holds with no record (a crash between make and record).
 * Records of another SFU are left to instances on it, but for a dead holder's, which go.
 */
export async function sweepMountpoints(deps: AppDeps): Promise<SweepResult> {
  const sfu = deps.sfu;
  const result: SweepResult = { destroyed: [], forgotten: [] };
  if (!sfu) return result;
  const now = deps.now();
  const records = new Map<string, Deno.KvEntry<MountpointRecord>>();
  for await (
    const e of deps.kv.list<MountpointRecord>({ prefix: ["sfu_mountpoints"] })
  ) {
    records.set(e.value.session_id, e);
  }
  // Closed by another instance (its record gone): forget this instance's copy.
  for (const id of liveOf(deps).keys()) {
    if (!records.has(id)) liveOf(deps).delete(id);
  }
  const ids = [...records.keys()];
  const sessions = new Map<string, SessionRecord | null>();
  const holders = new Map<string, InstanceRecord | null>();
  for (let i = 0; i < ids.length; i += 10) {
    const part = ids.slice(i, i + 10);
    const got = await kvTry(deps.kv.getMany(part.map(sessionKey)));
    part.forEach((id, k) => sessions.set(id, recordOf(deps, got[k])));
  }
  const holderIds = [
    ...new Set([...records.values()].map((e) => e.value.holder)),
  ];
  for (let i = 0; i < holderIds.length; i += 10) {
    const part = holderIds.slice(i, i + 10);
    const got = await kvTry(
      deps.kv.getMany<InstanceRecord[]>(part.map(instanceKey)),
    );
    part.forEach((id, k) => holders.set(id, got[k].value));
  }
  const keep = new Set<number>();
  for (const [id, entry] of records) {
    const r = entry.value;
    const s = sessions.get(id);
    const holderAlive = alive(
      deps,
      r.holder,
      holders.get(r.holder) ?? null,
      now,
    );
    if (!onThisSfu(deps, r)) {
      if (!holderAlive && await forgetForeign(deps, entry)) {
        result.forgotten.push(id);
      }
      continue;
    }
    const stale = !s || isTerminal(s.status) || !holderAlive ||
      (r.mountpoint_id === null && now - r.created_at > PENDING_MS);
    if (!stale) {
      if (r.mountpoint_id !== null) keep.add(r.mountpoint_id);
      continue;
    }
    try {
      if (r.mountpoint_id !== null) {
        await sfu.destroyMountpoint(r.mountpoint_id);
        result.destroyed.push(r.mountpoint_id);
      }
      await kvTry(
        deps.kv.atomic().check(entry).delete(mountpointKey(id)).commit(),
      );
      liveOf(deps).delete(id);
    } catch (err) {
      deps.log.warn("sfu sweep: destroy failed", { session_id: id, err });
    }
  }
  // Mountpoints on the SFU with no record of it: ours by label, left by a crash (or by
  // a make here for a session whose record an instance on another SFU rewrote). `keep`
  // holds this SFU's ids only; a record still being made (on any SFU), or one naming
  // this very id, spares a mountpoint.
  const pendingIds = new Set(
    [...records.values()].filter((e) => e.value.mountpoint_id === null).map((
      e,
    ) => e.value.session_id),
  );
  let misnamed = 0;
  for (const m of await sfu.listMountpoints()) {
    if (keep.has(m.id) || !m.label.startsWith("session:")) continue;
    if (pendingIds.has(m.label) || result.destroyed.includes(m.id)) continue;
    if (liveOf(deps).get(m.label)?.id === m.id) continue;
    const rec = records.get(m.label);
    if (rec && rec.value.mountpoint_id === m.id) {
      // Another SFU's record naming this very (random) id: this Janus under another id.
      if (!onThisSfu(deps, rec.value)) misnamed++;
      continue;
    }
    // Made since our snapshot? Its record was written before the SFU made it.
    const fresh = await kvTry(deps.kv.get(mountpointKey(m.label)));
    if (fresh.value !== null && !rec) continue;
    try {
      await sfu.destroyMountpoint(m.id);
      result.destroyed.push(m.id);
    } catch (err) {
      deps.log.warn("sfu sweep: destroy failed", { err });
    }
  }
  if (misnamed > 0) {
    deps.log.warn(
      "sfu sweep: mountpoints on this SFU are recorded under another SFU id; instances sharing a Janus need the same SFU_URL and SFU_API_KEY",
      { count: misnamed },
    );
  }
  return result;
}

/**
 * Starts the SFU side of the service: destroys a session's mountpoint when it turns
 * terminal, and sweeps leftovers now and every `SWEEP_INTERVAL_MS`.
 */
export function startSfu(deps: AppDeps): void {
  if (!deps.sfu) return;
  deps.sessionHooks.afterCommit.push((before, after) => {
    const b = before as SessionRecord | null;
    const a = after as SessionRecord;
    if (a.transport !== "webrtc_sfu" || !isTerminal(a.status)) return;
    if (b && isTerminal(b.status)) return;
    closeMountpoint(deps, a.session_id).catch((err) =>
      deps.log.warn("sfu: mountpoint destroy failed; the sweep retries", {
        session_id: a.session_id,
        err,
      })
    );
  });
  // The metrics: the SFU's health as last probed (each sweep probes it, cached) and
  // this instance's live mountpoints.
  deps.metrics.sample(() => {
    const ok = lastSfuHealth(deps);
    if (ok !== undefined) deps.metrics.sfuUp.set(ok ? 1 : 0);
    deps.metrics.sfuMountpoints.set(liveOf(deps).size);
  });
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      const r = await sweepMountpoints(deps);
      if (r.destroyed.length > 0) {
        deps.log.info("sfu sweep destroyed leftover mountpoints", {
          count: r.destroyed.length,
        });
      }
      if (r.forgotten.length > 0) {
        deps.log.info(
          "sfu sweep deleted dead holders' records of another SFU",
          {
            count: r.forgotten.length,
          },
        );
      }
    } catch (err) {
      deps.log.warn("sfu sweep failed", { err });
    } finally {
      running = false;
    }
    // The SFU's health for the metrics, after the sweep (cached, one probe at a time).
    await sfuHealthy(deps);
  };
  void sweep();
  const timer = setInterval(sweep, SWEEP_INTERVAL_MS);
  deps.onClose.push(() => clearInterval(timer));
}
