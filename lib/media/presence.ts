/**
 * Where live media is: whether a session currently has a browser socket (for the idle
 * timeout), and which instances are alive (heartbeats), so the reaper can tell a quiet
 * session from one whose holder died.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../store.ts";

export interface Presence {
  attached: boolean;
  /** When `attached` last changed (epoch ms). */
  since: number;
  instance: string;
}

export interface InstanceRecord {
  started_at: number;
  heartbeat_at: number;
}

export const presenceKey = (sessionId: string) =>
  ["media_presence", sessionId] as const;
export const instanceKey = (instanceId: string) =>
  ["instances", instanceId] as const;

/** How often an instance refreshes its heartbeat, and when a silent one counts as gone. */
export const HEARTBEAT_MS = 10_000;
export const INSTANCE_STALE_MS = 35_000;

/** Starts this instance's heartbeat; stops (and deletes the record) on close. */
export function startHeartbeat(deps: AppDeps): void {
  const startedAt = deps.now();
  const beat = () =>
    kvTry(deps.kv.set(
      instanceKey(deps.instanceId),
      {
        started_at: startedAt,
        heartbeat_at: deps.now(),
      } satisfies InstanceRecord,
      { expireIn: INSTANCE_STALE_MS * 2 },
    )).catch((err) => deps.log.warn("heartbeat failed", { err }));
  void beat();
  const timer = setInterval(beat, HEARTBEAT_MS);
  deps.onClose.push(async () => {
    clearInterval(timer);
    await kvTry(deps.kv.delete(instanceKey(deps.instanceId))).catch(() =>
      undefined
    );
  });
}
