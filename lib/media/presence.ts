/**
 * Where live media is: whether a session currently has a browser socket (for the idle
 * timeout), and which instances are alive (heartbeats), so the reaper can tell a quiet
 * session from one whose holder died.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";

export interface Presence {
  attached: boolean;
  /** When `attached` last changed (epoch ms). */
  since: number;
  instance: string;
}

export interface InstanceRecord {
  started_at: number;
  heartbeat_at: number;
  /** Where other instances reach this one, for relayed media sockets. */
  url?: string;
}

export const presenceKey = (sessionId: string) =>
  ["media_presence", sessionId] as const;
export const instanceKey = (instanceId: string) =>
  ["instances", instanceId] as const;

/** How often an instance refreshes its heartbeat, and when a silent one counts as gone. */
export const HEARTBEAT_MS = 10_000;
export const INSTANCE_STALE_MS = 35_000;

const beats = new WeakMap<AppDeps, () => Promise<void>>();

/** Writes this instance's record now (e.g. once `main.ts` knows its URL). */
export async function announceInstance(deps: AppDeps): Promise<void> {
  await beats.get(deps)?.();
}

/** Starts this instance's heartbeat; stops (and deletes the record) on close. */
export function startHeartbeat(deps: AppDeps): void {
  const startedAt = deps.now();
  const beat = () =>
    kvTry(deps.kv.set(
      instanceKey(deps.instanceId),
      {
        started_at: startedAt,
        heartbeat_at: deps.now(),
        ...(deps.instanceUrl ? { url: deps.instanceUrl } : {}),
      } satisfies InstanceRecord,
      { expireIn: INSTANCE_STALE_MS * 2 },
    )).then(
      () => undefined,
      (err) => deps.log.warn("heartbeat failed", { err }),
    );
  beats.set(deps, beat);
  void beat();
  const timer = setInterval(beat, HEARTBEAT_MS);
  deps.onClose.push(async () => {
    clearInterval(timer);
    await kvTry(deps.kv.delete(instanceKey(deps.instanceId))).catch(() =>
      undefined
    );
  });
}
