/**
 * Per-tenant usage counters (DECISIONS 4, issue 15): sessions that reached a terminal
 * state and the milliseconds they spent `active`, kept in hourly and daily buckets that
 * the terminal move itself updates (same atomic commit, checked against the buckets'
 * versionstamps), so the totals always equal the sum of the sessions' `duration_s`.
 *
 * Keys: `["tenant_usage", tenant, "hour" | "day", bucket_start_ms, shard]` →
 * `UsageBucket`. A bucket is split into `USAGE_SHARDS` shards by session id so that
 * concurrent ends of one tenant rarely contend for one entry; readers add the shards up.
 * Hourly buckets expire after 2 days, daily ones after 32 days.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";

export const HOUR_MS = 3600_000;
export const DAY_MS = 24 * HOUR_MS;
/** Shards of one bucket (see the module doc). */
export const USAGE_SHARDS = 8;
const HOUR_BUCKET_KEEP_MS = 2 * DAY_MS;
const DAY_BUCKET_KEEP_MS = 32 * DAY_MS;

/** The value of one usage bucket shard. */
export interface UsageBucket {
  /** Sessions that reached a terminal state in the bucket's span. */
  sessions: number;
  /** Of those, the ones that ended from `active` (they carry `duration_s`). */
  active_sessions: number;
  /** Milliseconds `active`, summed over those sessions. */
  active_ms: number;
}

/** A total over a window, as the console shows it. */
export interface UsageTotal extends UsageBucket {
  /** Start of the oldest bucket counted (epoch ms). */
  since: number;
}

export type UsageGrain = "hour" | "day";

function shardOf(sessionId: string): number {
  let h = 0;
  for (let i = 0; i < sessionId.length; i++) {
    h = (h * 31 + sessionId.charCodeAt(i)) >>> 0;
  }
  return h % USAGE_SHARDS;
}

/** Start (epoch ms, UTC) of the `grain` bucket holding `at`. */
export function bucketStart(grain: UsageGrain, at: number): number {
  const size = grain === "hour" ? HOUR_MS : DAY_MS;
  return Math.floor(at / size) * size;
}

/** The key of the `grain` bucket shard that a session ending at `at` counts in. */
export function usageKey(
  tenantId: string,
  grain: UsageGrain,
  at: number,
  sessionId: string,
): Deno.KvKey {
  return [
    "tenant_usage",
    tenantId,
    grain,
    bucketStart(grain, at),
    shardOf(sessionId),
  ];
}

/** The keys a terminal move of `sessionId` at `at` updates: hour, then day. */
export function usageKeys(
  tenantId: string,
  sessionId: string,
  at: number,
): [Deno.KvKey, Deno.KvKey] {
  return [
    usageKey(tenantId, "hour", at, sessionId),
    usageKey(tenantId, "day", at, sessionId),
  ];
}

function bucketOf(value: unknown): UsageBucket {
  const v = value as Partial<UsageBucket> | null;
  const n = (x: unknown) => typeof x === "number" && Number.isFinite(x) ? x : 0;
  return {
    sessions: n(v?.sessions),
    active_sessions: n(v?.active_sessions),
    active_ms: n(v?.active_ms),
  };
}

/**
 * Adds one terminal session to the buckets read as `entries` (from `usageKeys`): checks
 * their versionstamps and sets the new values on `op`, so the counts commit with the
 * move or not at all. `activeMs` is undefined for a session that was never `active`.
 */
export function addUsageToCommit(
  op: Deno.AtomicOperation,
  entries: Deno.KvEntryMaybe<unknown>[],
  activeMs: number | undefined,
): void {
  entries.forEach((entry, i) => {
    const b = bucketOf(entry.value);
    b.sessions += 1;
    if (activeMs !== undefined) {
      b.active_sessions += 1;
      b.active_ms += activeMs;
    }
    op.check(entry).set(entry.key, b, {
      expireIn: i === 0 ? HOUR_BUCKET_KEEP_MS : DAY_BUCKET_KEEP_MS,
    });
  });
}

/** Sums `grain` buckets of `tenantId` starting at or after `since`. */
async function sumSince(
  deps: AppDeps,
  tenantId: string,
  grain: UsageGrain,
  since: number,
): Promise<UsageTotal> {
  const total: UsageTotal = {
    sessions: 0,
    active_sessions: 0,
    active_ms: 0,
    since,
  };
  const prefix = ["tenant_usage", tenantId, grain];
  await kvTry(async () => {
    const iter = deps.kv.list({
      start: [...prefix, since],
      end: [...prefix, Number.MAX_SAFE_INTEGER],
    });
    for await (const e of iter) {
      const b = bucketOf(e.value);
      total.sessions += b.sessions;
      total.active_sessions += b.active_sessions;
      total.active_ms += b.active_ms;
    }
  });
  return total;
}

/**
 * The tenant's totals: the last 24 hours (the current hourly bucket and the 23 before
 * it) and the last 30 days (the current UTC day and the 29 before it).
 */
export async function tenantUsage(
  deps: AppDeps,
  tenantId: string,
): Promise<{ last24h: UsageTotal; last30d: UsageTotal }> {
  const now = deps.now();
  const [last24h, last30d] = await Promise.all([
    sumSince(deps, tenantId, "hour", bucketStart("hour", now) - 23 * HOUR_MS),
    sumSince(deps, tenantId, "day", bucketStart("day", now) - 29 * DAY_MS),
  ]);
  return { last24h, last30d };
}
