/**
 * Session records in Deno KV and the one function that moves a session between states.
 *
 * Keys:
 * - `["sessions", id]` → `SessionRecord` (never credentials or tokens)
 * - `["sessions_by_tenant", tenant, id]` → id (the tenant's sessions, newest last)
 * - `["sessions_open", id]` → id, present exactly while the session is non-terminal
 * - `["tenant_open_sessions", tenant]` → `Deno.KvU64`, the tenant's non-terminal count
 *
 * Every move is an atomic commit checked against the versionstamp it read, so two
 * callers (or instances) can never both move one session.
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import type { ProviderType } from "../ports/providers.ts";
import type { EndReason, SessionStatus, Transport } from "../api/schemas.ts";
import { kvTry } from "../kv/store.ts";
import { addUsageToCommit, usageKeys } from "./usage.ts";

export const TERMINAL_STATUSES = [
  "ended",
  "ended_with_warnings",
  "failed",
] as const satisfies readonly SessionStatus[];
export type TerminalStatus = typeof TERMINAL_STATUSES[number];

/** Whether `status` is terminal (SPEC 3). */
export function isTerminal(status: SessionStatus): boolean {
  return (TERMINAL_STATUSES as readonly SessionStatus[]).includes(status);
}

/** How long a terminal session stays readable (DECISIONS 4: at least 7 days). */
export const TERMINAL_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** How often a conflicting commit is retried before answering 503. */
export const MAX_COMMIT_ATTEMPTS = 32;

/** Adding this to a `Deno.KvU64` with `sum` subtracts one (sum wraps around at 2^64). */
export const KV_U64_MINUS_ONE = new Deno.KvU64((1n << 64n) - 1n);

export interface TimelineEntry {
  status: SessionStatus;
  at: number;
}

export interface SessionRecord {
  session_id: string;
  tenant_id: string;
  status: SessionStatus;
  provider_type: ProviderType;
  /** Resolved: never `auto`. */
  transport: Exclude<Transport, "auto">;
  /**
   * Set when `auto` resolved to `webrtc_sfu`: a socket whose browser cannot play WebRTC
   * is served `websocket_fmp4` instead (DECISIONS 11); REST still says `webrtc_sfu`.
   */
  fmp4_fallback?: true;
  avatar_id: string;
  /** Render slots it takes, when more than one (`slotsForFrame` of its avatar's framing). */
  render_slots?: number;
  bg_id: string;
  webhook_url?: string;
  created_at: number;
  started_at?: number;
  ended_at?: number;
  warning?: string;
  /**
   * Why the session ended (DECISIONS 4): set with the move into `ending` (the end under
   * way) and with every move into a terminal state; public once terminal.
   */
  end_reason?: EndReason;
  chunks_rendered?: number;
  /** Seconds `active` (not counting `ending`); set by the terminal move. */
  duration_s?: number;
  /** Instance id of the process holding the credentials and live side. */
  owner: string;
  timeline: TimelineEntry[];
  /** Terminal records: epoch ms after which the record is gone (also its `expireIn`). */
  retain_until?: number;
}

export function sessionKey(id: string): Deno.KvKey {
  return ["sessions", id];
}

export function sessionsByTenantKey(tenantId: string, id: string): Deno.KvKey {
  return ["sessions_by_tenant", tenantId, id];
}

export function sessionsOpenKey(id: string): Deno.KvKey {
  return ["sessions_open", id];
}

export function tenantOpenSessionsKey(tenantId: string): Deno.KvKey {
  return ["tenant_open_sessions", tenantId];
}

/** The value of a counter entry, reading absent (and a wrapped negative) as 0. */
export function counterValue(entry: Deno.KvEntryMaybe<unknown>): number {
  const v = entry.value;
  if (!(v instanceof Deno.KvU64)) return 0;
  return v.value >= 1n << 63n ? 0 : Number(v.value);
}

/** The record in `entry` when it is a live (not past retention) session. */
export function recordOf(
  deps: AppDeps,
  entry: Deno.KvEntryMaybe<unknown>,
): SessionRecord | null {
  const rec = entry.value as SessionRecord | null;
  if (!rec || typeof rec !== "object" || typeof rec.session_id !== "string") {
    return null;
  }
  if (rec.retain_until !== undefined && rec.retain_until <= deps.now()) {
    return null;
  }
  return rec;
}

/** Reads a session, or null when there is none (or it is past retention). */
export async function readSession(
  deps: AppDeps,
  id: string,
): Promise<SessionRecord | null> {
  return recordOf(deps, await kvTry(deps.kv.get(sessionKey(id))));
}

export interface ListSessionsOptions {
  tenant_id?: string;
  status?: SessionStatus;
  /** From a previous page's `cursor`. */
  cursor?: string;
  /** 1..200, default 50. */
  limit?: number;
}

/**
 * Lists sessions newest first, optionally of one tenant and/or status. Returns a
 * `cursor` (the id to continue below) when more may follow. With a status filter a
 * page may hold fewer than `limit` sessions: at most 10×`limit` are scanned per page.
 */
export async function listSessions(
  deps: AppDeps,
  options: ListSessionsOptions = {},
): Promise<{ sessions: SessionRecord[]; cursor?: string }> {
  const limit = Math.min(200, Math.max(1, Math.floor(options.limit ?? 50)));
  const prefix: Deno.KvKey = options.tenant_id !== undefined
    ? ["sessions_by_tenant", options.tenant_id]
    : ["sessions"];
  const selector: Deno.KvListSelector = options.cursor
    ? { prefix, end: [...prefix, options.cursor] }
    : { prefix };
  const budget = options.status ? limit * 10 : limit;
  const matches = (rec: SessionRecord | null): rec is SessionRecord =>
    rec !== null && (!options.status || rec.status === options.status);
  return await kvTry(async () => {
    const sessions: SessionRecord[] = [];
    let scanned = 0;
    let lastScanned: string | undefined;
    let batch: string[] = [];
    const flush = async (): Promise<boolean> => {
      const entries = await deps.kv.getMany(batch.map(sessionKey));
      batch = [];
      for (const e of entries) {
        const rec = recordOf(deps, e);
        if (matches(rec)) sessions.push(rec);
        if (sessions.length >= limit) return true;
      }
      return false;
    };
    const iter = deps.kv.list<unknown>(selector, {
      reverse: true,
      limit: budget,
      batchSize: Math.min(budget, 500),
    });
    for await (const e of iter) {
      scanned++;
      lastScanned = String(e.key[e.key.length - 1]);
      if (options.tenant_id === undefined) {
        const rec = recordOf(deps, e);
        if (matches(rec)) sessions.push(rec);
        if (sessions.length >= limit) break;
        continue;
      }
      batch.push(String(e.value));
      if (batch.length >= Math.min(10, limit - sessions.length)) {
        if (await flush()) break;
      }
    }
    if (batch.length > 0 && sessions.length < limit) await flush();
    if (sessions.length >= limit) {
      return { sessions, cursor: sessions[limit - 1].session_id };
    }
    return scanned >= budget && lastScanned !== undefined
      ? { sessions, cursor: lastScanned }
      : { sessions };
  });
}

export type MoveResult =
  | { ok: true; session: SessionRecord; previous: SessionRecord }
  | { ok: false; reason: "not_found" | "wrong_state"; session?: SessionRecord };

interface MoveCommon {
  /** Statuses the session may be in for the move to happen. */
  from: readonly SessionStatus[];
  /** Fields to set along with the move (never `status`, `session_id` or `tenant_id`). */
  patch?: Partial<
    Pick<
      SessionRecord,
      "started_at" | "ended_at" | "warning" | "chunks_rendered"
    >
  >;
  /** An entry of the session already read (e.g. prefetched with authentication). */
  entry?: Deno.KvEntryMaybe<unknown>;
  /**
   * When the move took effect, if earlier than now (epoch ms): a session whose holder
   * stopped ended when it was last heard of, not when the reaper noticed. Never
   * before the session's last move.
   */
  at?: number;
}

/** Why a move into `ending` or a terminal state happens; a function reads the record. */
export type MoveReason = EndReason | ((before: SessionRecord) => EndReason);

/**
 * A move. A move into `ending` or into a terminal state must say why (`reason`): the
 * type admits no terminal move without one.
 */
export type MoveOptions =
  & MoveCommon
  & (
    | { to: "created" | "activating" | "active"; reason?: undefined }
    | { to: "ending" | TerminalStatus; reason: MoveReason }
  );

/** Epoch ms the session spent `active` by the time of `timeline`'s last entry. */
function activeMsOf(rec: SessionRecord): number | undefined {
  const i = rec.timeline.findLastIndex((t) => t.status === "active");
  if (i < 0) return undefined;
  const left = rec.timeline[i + 1];
  if (!left) return undefined;
  return Math.max(0, left.at - rec.timeline[i].at);
}

/**
 * Moves session `id` from one of `from` to `to` in one atomic commit checked against
 * the versionstamp read; conflicting commits are re-read and retried (bounded, then 503
 * `AVTR_SESSION_STATE_UNAVAILABLE`). The commit also carries every
 * `deps.sessionHooks.inCommit` hook; `afterCommit` hooks run once it is durable. A
 * move into `ending` or a terminal state records `end_reason`. A move into a terminal
 * state sets `ended_at` and, when the session was `active`, `duration_s` (seconds
 * `active`, not counting `ending`) and `chunks_rendered`; it removes `sessions_open`,
 * decrements the tenant's open counter, adds the session to the tenant's usage buckets
 * (lib/sessions/usage.ts), gives the record ≥ 7 days of retention, then zeroes the
 * credentials and frees the render slot. Terminal sessions never move again.
 */
export async function moveSession(
  deps: AppDeps,
  id: string,
  options: MoveOptions,
): Promise<MoveResult> {
  if (
    (options.to === "ending" || isTerminal(options.to)) &&
    options.reason === undefined
  ) {
    // The type already forbids it; a caller that casts it away still cannot.
    throw new TypeError(`moveSession: a move to ${options.to} needs a reason`);
  }
  let entry = options.entry;
  for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
    if (!entry || attempt > 0) {
      entry = await kvTry(deps.kv.get(sessionKey(id)));
    }
    const before = recordOf(deps, entry);
    if (!before) return { ok: false, reason: "not_found" };
    if (!options.from.includes(before.status) || isTerminal(before.status)) {
      return { ok: false, reason: "wrong_state", session: before };
    }
    const now = Math.max(
      before.timeline.at(-1)?.at ?? before.created_at,
      Math.min(deps.now(), options.at ?? Infinity),
    );
    const after: SessionRecord = {
      ...before,
      ...options.patch,
      status: options.to,
      timeline: [...before.timeline, { status: options.to, at: now }],
    };
    if (options.to === "active" && after.started_at === undefined) {
      after.started_at = now;
    }
    if (options.reason !== undefined) {
      after.end_reason = typeof options.reason === "function"
        ? options.reason(before)
        : options.reason;
    }
    const op = deps.kv.atomic().check(entry);
    if (isTerminal(options.to)) {
      after.ended_at ??= now;
      const activeMs = activeMsOf(after);
      if (activeMs !== undefined) {
        after.duration_s = activeMs / 1000;
        after.chunks_rendered ??= 0;
      }
      after.retain_until = now + TERMINAL_RETENTION_MS;
      const keep = { expireIn: TERMINAL_RETENTION_MS };
      op.set(sessionKey(id), after, keep)
        .set(sessionsByTenantKey(before.tenant_id, id), id, keep)
        .delete(sessionsOpenKey(id))
        .sum(tenantOpenSessionsKey(before.tenant_id), KV_U64_MINUS_ONE.value);
      const buckets = await kvTry(
        deps.kv.getMany(usageKeys(before.tenant_id, id, now)),
      );
      addUsageToCommit(op, buckets, activeMs);
    } else {
      op.set(sessionKey(id), after);
    }
    for (const hook of deps.sessionHooks.inCommit) hook(op, before, after);
    const res = await kvTry(op.commit());
    if (!res.ok) {
      await conflictBackoff(attempt);
      continue;
    }
    if (isTerminal(after.status)) {
      deps.vault.zero(id);
      deps.renderSlots.release(id);
    }
    runAfterCommit(deps, before, after);
    return { ok: true, session: after, previous: before };
  }
  throw new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "Session state is busy, try again",
    { cause: new Error(`moveSession: ${MAX_COMMIT_ATTEMPTS} conflicts`) },
  );
}

/** A short random pause after a lost commit race, so contenders spread out. */
export function conflictBackoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(25, 2 ** Math.min(attempt, 5));
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs the `afterCommit` hooks; a failing hook is logged, never propagated. */
export function runAfterCommit(
  deps: AppDeps,
  before: SessionRecord | null,
  after: SessionRecord,
): void {
  for (const hook of deps.sessionHooks.afterCommit) {
    try {
      hook(before, after);
    } catch (err) {
      deps.log.error("session afterCommit hook failed", {
        session_id: after.session_id,
        err,
      });
    }
  }
}
