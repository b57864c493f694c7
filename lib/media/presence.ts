/**
 * Where live media is: whether a session currently has a browser socket (for the idle
 * timeout), and which instances are alive (heartbeats), so the reaper can tell a quiet
 * session from one whose holder died.
 */
import type { AppDeps } from "../deps.ts";
import type { Config } from "../config.ts";
import { kvTry } from "../kv/store.ts";
import type { ServiceRole } from "../config_nodes.ts";

export interface Presence {
  attached: boolean;
  /** When `attached` last changed (epoch ms). */
  since: number;
  instance: string;
}

export interface InstanceRecord {
  started_at: number;
  heartbeat_at: number;
  /** Where other instances reach this one, for relayed media sockets and handoffs. */
  url?: string;
  /** `SERVICE_ROLE`; records written before roles existed count as `all`. */
  role?: ServiceRole;
  /** Render slots of the instance at its last heartbeat (a media node's capacity). */
  render?: { free: number; max: number };
  /** Whether the instance has a realtime SFU (`SFU_URL`). */
  sfu?: boolean;
  /** Set while the instance drains: it takes no new session. */
  draining?: boolean;
}

export const presenceKey = (sessionId: string) =>
  ["media_presence", sessionId] as const;
export const instanceKey = (instanceId: string) =>
  ["instances", instanceId] as const;

/** An instance silent for this many heartbeats (`NODE_HEARTBEAT_MS`) counts as gone. */
export const STALE_HEARTBEATS = 3.5;

/** How long after its last heartbeat an instance counts as gone. */
export function instanceStaleMs(config: Pick<Config, "heartbeatMs">): number {
  return config.heartbeatMs * STALE_HEARTBEATS;
}

/**
 * Whether a control plane may send credentials or tokens to an instance at `url`
 * (handoffs, relayed sockets): https, or http when private targets are allowed.
 */
export function instanceUrlAllowed(deps: AppDeps, url: string): boolean {
  if (url.startsWith("https://")) return true;
  return url.startsWith("http://") && deps.config.allowPrivateNetworkTargets;
}

/** Whether `rec` (an instance's record, or null when absent) has a fresh heartbeat. */
export function heartbeatFresh(
  deps: AppDeps,
  rec: InstanceRecord | null | undefined,
  now = deps.now(),
): rec is InstanceRecord {
  return Boolean(rec && now - rec.heartbeat_at < instanceStaleMs(deps.config));
}

const beats = new WeakMap<AppDeps, () => Promise<void>>();
const stops = new WeakMap<AppDeps, () => Promise<void>>();

/** Writes this instance's record now (e.g. once `main.ts` knows its URL). */
export async function announceInstance(deps: AppDeps): Promise<void> {
  await beats.get(deps)?.();
}

/** Starts this instance's heartbeat; stops (and deletes the record) on close. */
export function startHeartbeat(deps: AppDeps): void {
  const startedAt = deps.now();
  const slots = deps.renderSlots;
  let stopping: Promise<void> | null = null;
  const writes = new Set<Promise<void>>();
  const beat = (): Promise<void> => {
    if (stopping) return Promise.resolve();
    const write = write1();
    writes.add(write);
    return write.finally(() => writes.delete(write));
  };
  const write1 = () =>
    kvTry(deps.kv.set(
      instanceKey(deps.instanceId),
      {
        started_at: startedAt,
        heartbeat_at: deps.now(),
        ...(deps.instanceUrl ? { url: deps.instanceUrl } : {}),
        role: deps.config.role,
        render: { free: Math.max(0, slots.max - slots.inUse), max: slots.max },
        sfu: deps.sfu !== null,
        ...(deps.draining ? { draining: true } : {}),
      } satisfies InstanceRecord,
      { expireIn: instanceStaleMs(deps.config) * 2 },
    )).then(
      () => undefined,
      (err) => deps.log.warn("heartbeat failed", { err }),
    );
  beats.set(deps, beat);
  void beat();
  const timer = setInterval(beat, deps.config.heartbeatMs);
  const stop = () =>
    stopping ??= (async () => {
      clearInterval(timer);
      beats.delete(deps);
      // A write still under way would bring the record back after the delete.
      await Promise.all([...writes]);
      await kvTry(deps.kv.delete(instanceKey(deps.instanceId))).catch(() =>
        undefined
      );
    })();
  stops.set(deps, stop);
  deps.onClose.push(stop);
}

/**
 * Stops this instance's heartbeat and deletes its record, so other instances see it as
 * gone at once (a shutdown's first step); idempotent, and a no-op without a heartbeat.
 */
export async function stopHeartbeat(deps: AppDeps): Promise<void> {
  await stops.get(deps)?.();
}
