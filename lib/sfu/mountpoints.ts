/**
 * One private SFU mountpoint per `webrtc_sfu` session (DECISIONS 11): recorded in KV
 * with its holder instance *before* the SFU makes it, destroyed when the session turns
 * terminal (whichever instance commits that move), and swept (lib/media/sfu_sweep.ts). The
 * record holds ids only, never a secret (a mountpoint's secret and pin derive from the
 * SFU key, lib/sfu/janus.ts).
 *
 * Each media node may run its own Janus, so a record names its SFU (`sfu_id`,
 * lib/sfu/identity.ts) and only instances on that SFU destroy its mountpoint: a
 * mountpoint id means nothing to another Janus (or names one of its own mountpoints).
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import type { Mountpoint } from "../ports/sfu.ts";

export interface MountpointRecord {
  session_id: string;
  /** Null while the SFU is making it. */
  mountpoint_id: number | null;
  /** Instance id of the process that made it and feeds it. */
  holder: string;
  /** The SFU it is on (`AppDeps.sfuId`); absent in records written before it was. */
  sfu_id?: string;
  created_at: number;
  /** The current socket's SFU viewer, for the console; absent before the first socket. */
  viewer?: ViewerState;
  /** When `viewer` last changed (epoch ms). */
  viewer_since?: number;
}

/** A session's SFU viewer: none (no socket), being negotiated, or receiving media. */
export type ViewerState = "none" | "negotiating" | "flowing";

/** KV key of a session's mountpoint record. */
export const mountpointKey = (sessionId: string) =>
  ["sfu_mountpoints", sessionId] as const;

/** This instance's live mountpoints (the renderer and the viewers need the ports). */
const live = new WeakMap<AppDeps, Map<string, Mountpoint>>();

/** This instance's live mountpoints by session id (lib/media/sfu_sweep.ts prunes it too). */
export function liveOf(deps: AppDeps): Map<string, Mountpoint> {
  let m = live.get(deps);
  if (!m) live.set(deps, m = new Map());
  return m;
}

/** The mountpoint this instance made for `sessionId`, if any. */
export function mountpointOf(
  deps: AppDeps,
  sessionId: string,
): Mountpoint | undefined {
  return liveOf(deps).get(sessionId);
}

/**
 * Makes `sessionId`'s mountpoint: the KV record first (so a crash leaves something the
 * sweep finds), then the SFU's mountpoint, then the record's id. Throws `SfuError` (or
 * a KV error); on failure nothing is left behind that the sweep would not remove.
 */
export async function openMountpoint(
  deps: AppDeps,
  sessionId: string,
  signal?: AbortSignal,
): Promise<Mountpoint> {
  const sfu = deps.sfu;
  if (!sfu) throw new Error("no SFU configured");
  const record: MountpointRecord = {
    session_id: sessionId,
    mountpoint_id: null,
    holder: deps.instanceId,
    ...(deps.sfuId !== null ? { sfu_id: deps.sfuId } : {}),
    created_at: deps.now(),
  };
  await kvTry(deps.kv.set(mountpointKey(sessionId), record));
  let mp: Mountpoint;
  try {
    mp = await sfu.createMountpoint(sessionId, signal);
  } catch (err) {
    await kvTry(deps.kv.delete(mountpointKey(sessionId))).catch(() => {});
    throw err;
  }
  liveOf(deps).set(sessionId, mp);
  try {
    await kvTry(deps.kv.set(
      mountpointKey(sessionId),
      {
        ...record,
        mountpoint_id: mp.id,
      } satisfies MountpointRecord,
    ));
  } catch (err) {
    await closeMountpoint(deps, sessionId).catch(() => {});
    throw err;
  }
  return mp;
}

/**
 * Whether `r`'s mountpoint is on this instance's SFU. A record written before records
 * named their SFU counts as on it, as every record did then.
 */
export function onThisSfu(deps: AppDeps, r: MountpointRecord): boolean {
  return r.sfu_id === undefined || r.sfu_id === deps.sfuId;
}

/**
 * Destroys `sessionId`'s mountpoint (if any) on the SFU and deletes its record. The
 * record stays when the SFU cannot be reached, for the sweep to retry. A record of
 * another SFU (this instance may be another node's reaper) is left alone: its holder's
 * sweep, or that of an instance on its SFU, removes it once the session is terminal.
 */
export async function closeMountpoint(
  deps: AppDeps,
  sessionId: string,
): Promise<void> {
  const sfu = deps.sfu;
  const mine = liveOf(deps).get(sessionId);
  liveOf(deps).delete(sessionId);
  if (!sfu) return;
  const entry = await kvTry(
    deps.kv.get<MountpointRecord>(mountpointKey(sessionId)),
  );
  const rec = entry.value && onThisSfu(deps, entry.value) ? entry.value : null;
  // `mine` was made on this SFU, whatever the record says now.
  const id = rec?.mountpoint_id ?? mine?.id;
  if (id !== undefined && id !== null) {
    await sfu.destroyMountpoint(id, AbortSignal.timeout(5_000));
  }
  if (rec) {
    await kvTry(
      deps.kv.atomic().check(entry).delete(mountpointKey(sessionId)).commit(),
    );
  }
}

/**
 * Records the viewer state of `sessionId` (best effort: a lost race or a store error
 * only leaves the console one change behind).
 */
export async function setViewerState(
  deps: AppDeps,
  sessionId: string,
  state: ViewerState,
): Promise<void> {
  try {
    const entry = await kvTry(
      deps.kv.get<MountpointRecord>(mountpointKey(sessionId)),
    );
    if (!entry.value || entry.value.viewer === state) return;
    await kvTry(
      deps.kv.atomic().check(entry).set(
        mountpointKey(sessionId),
        {
          ...entry.value,
          viewer: state,
          viewer_since: deps.now(),
        } satisfies MountpointRecord,
      ).commit(),
    );
  } catch (err) {
    deps.log.warn("sfu viewer state not recorded", {
      session_id: sessionId,
      err,
    });
  }
}

/** The mountpoint record of `sessionId` (for the console), or null. */
export async function readMountpointRecord(
  deps: AppDeps,
  sessionId: string,
): Promise<MountpointRecord | null> {
  const entry = await kvTry(
    deps.kv.get<MountpointRecord>(mountpointKey(sessionId)),
  );
  return entry.value;
}
