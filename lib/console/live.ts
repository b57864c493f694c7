/**
 * The live sessions feed: snapshots of the newest sessions (with a live counter) and a
 * server-sent-events stream of them. The stream polls KV every second rather than
 * relying on `kv.watch`, which does not see other processes' writes to a local KV file
 * (DECISIONS 0); polling works on every backend. It sends a snapshot at once on every
 * (re)connect, then whenever the table would change, so a reconnecting EventSource
 * resumes with the current state whatever it missed.
 */
import type { AppDeps } from "../deps.ts";
import {
  administers,
  type Administrator,
  visibleTenant,
} from "../principal.ts";
import type { SessionStatus } from "../api/schemas.ts";
import {
  counterValue,
  isSessionId,
  isTerminal,
  listSessions,
  readSession,
  type SessionRecord,
  tenantOpenSessionsKey,
} from "../sessions.ts";
import { kvTry } from "../kv/store.ts";
import type { SessionRow } from "./format.ts";

export interface SessionsQuery {
  tenant_id?: string;
  status?: SessionStatus;
  cursor?: string;
}

export interface SessionsSnapshot {
  rows: SessionRow[];
  /** Non-terminal sessions (of the tenant, when filtered by one). */
  live_count: number;
  /** Server clock (epoch ms) when the snapshot was read. */
  now: number;
  /** Set when older sessions follow. */
  cursor?: string;
}

/** Rows per page of the sessions table. */
export const SESSIONS_PAGE = 50;
/** How often the stream polls KV. */
export const POLL_MS = 1000;
/** A comment line keeps idle connections (and proxies) open, and detects dead peers. */
export const KEEPALIVE_MS = 15_000;
/**
 * Events a feed may have queued for a client that does not read them; past it the feed
 * ends (the page's EventSource reconnects when it reads again), so a signed-in client
 * that opens feeds and never reads cannot grow the process by a snapshot per change.
 */
export const MAX_UNREAD_EVENTS = 16;

/** The table row of a session record (only display fields; never credentials). */
export function toRow(rec: SessionRecord): SessionRow {
  const row: SessionRow = {
    session_id: rec.session_id,
    tenant_id: rec.tenant_id,
    status: rec.status,
    provider_type: rec.provider_type,
    transport: rec.transport,
    created_at: rec.created_at,
  };
  if (rec.started_at !== undefined) row.started_at = rec.started_at;
  if (rec.ended_at !== undefined) row.ended_at = rec.ended_at;
  if (rec.duration_s !== undefined) row.duration_s = rec.duration_s;
  if (isTerminal(rec.status) && rec.end_reason !== undefined) {
    row.end_reason = rec.end_reason;
  }
  return row;
}

/**
 * The session `sessionId` when `by` administers its tenant, else null (another tenant's
 * session is "not found" to a tenant administrator, as in SPEC 5.2).
 */
export async function readAdministeredSession(
  deps: AppDeps,
  by: Administrator,
  sessionId: string,
): Promise<SessionRecord | null> {
  if (!isSessionId(sessionId)) return null;
  const rec = await readSession(deps, sessionId);
  return rec !== null && administers(by, rec.tenant_id) ? rec : null;
}

/** Counts non-terminal sessions: one tenant's counter, or every open-session marker. */
export async function liveCount(
  deps: AppDeps,
  tenantId?: string,
): Promise<number> {
  if (tenantId !== undefined) {
    return counterValue(
      await kvTry(deps.kv.get(tenantOpenSessionsKey(tenantId))),
    );
  }
  return await kvTry(async () => {
    let n = 0;
    for await (const _ of deps.kv.list({ prefix: ["sessions_open"] })) n++;
    return n;
  });
}

/**
 * Reads one page of the sessions table and the live counter, as `by` may see them: a
 * tenant administrator its own tenant's sessions only, whatever the query asks for.
 */
export async function sessionsSnapshot(
  deps: AppDeps,
  by: Administrator,
  query: SessionsQuery,
): Promise<SessionsSnapshot> {
  const tenant = visibleTenant(by, query.tenant_id);
  if (tenant === null) return { rows: [], live_count: 0, now: deps.now() };
  const [page, count] = await Promise.all([
    listSessions(deps, {
      tenant_id: tenant,
      status: query.status,
      cursor: query.cursor,
      limit: SESSIONS_PAGE,
    }),
    liveCount(deps, tenant),
  ]);
  const snap: SessionsSnapshot = {
    rows: page.sessions.map(toRow),
    live_count: count,
    now: deps.now(),
  };
  if (page.cursor) snap.cursor = page.cursor;
  return snap;
}

const openStreams = new WeakMap<AppDeps, Set<() => void>>();

function register(deps: AppDeps, close: () => void): () => void {
  let set = openStreams.get(deps);
  if (!set) {
    const streams = new Set<() => void>();
    set = streams;
    openStreams.set(deps, streams);
    // Open streams would hold the server open at shutdown: end them first.
    deps.onClose.push(() => {
      for (const c of [...streams]) c();
    });
  }
  set.add(close);
  return () => set.delete(close);
}

/**
 * Who holds a feed, for its caps: the credential that signed in (an API key by its id,
 * the operator's `ADMIN_API_KEY` as one) and its tenant. Not the console session: a
 * key that signs in again holds no more feeds than before.
 */
export interface FeedHolder {
  principal: string;
  tenant: string;
}

export interface StreamOptions {
  /** Re-checked before every poll; when false the stream says so and ends. */
  stillAllowed: () => Promise<boolean>;
  pollMs?: number;
  /** Whose feed it is (`MAX_FEEDS_PER_KEY`, `MAX_FEEDS_PER_TENANT`); none: uncapped. */
  holder?: FeedHolder;
}

/**
 * Live feeds one credential may hold open on an instance, over all its sign-ins (a few
 * tabs). Each polls KV every second for as long as it is open: without a bound, one
 * tenant administrator could open thousands and keep the process polling for them.
 */
export const MAX_FEEDS_PER_KEY = 8;
/** Live feeds one tenant's credentials together may hold open on an instance. */
export const MAX_FEEDS_PER_TENANT = 32;

/** The feed holder of a console session's record. */
export function feedHolderOf(
  record: { kind: string; tenant_id: string; key_id?: string },
): FeedHolder {
  return {
    principal: record.kind === "api_key" && record.key_id
      ? `api_key:${record.key_id}`
      : `${record.kind}:${record.tenant_id}`,
    tenant: record.tenant_id,
  };
}

interface FeedCounts {
  byPrincipal: Map<string, number>;
  byTenant: Map<string, number>;
}

const feedCounts = new WeakMap<AppDeps, FeedCounts>();

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/**
 * Counts a feed of `holder`: its release, or why it is refused (the credential or the
 * tenant already holds its cap).
 */
function takeFeed(
  deps: AppDeps,
  holder: FeedHolder,
): { release: () => void } | { refused: string } {
  let c = feedCounts.get(deps);
  if (!c) {
    feedCounts.set(deps, c = { byPrincipal: new Map(), byTenant: new Map() });
  }
  const counts = c;
  if ((counts.byPrincipal.get(holder.principal) ?? 0) >= MAX_FEEDS_PER_KEY) {
    return {
      refused:
        `This API key already holds ${MAX_FEEDS_PER_KEY} live feeds, over all its sign-ins: close a console tab`,
    };
  }
  if ((counts.byTenant.get(holder.tenant) ?? 0) >= MAX_FEEDS_PER_TENANT) {
    return {
      refused:
        `Tenant ${holder.tenant} already holds ${MAX_FEEDS_PER_TENANT} live feeds: close a console tab`,
    };
  }
  bump(counts.byPrincipal, holder.principal, 1);
  bump(counts.byTenant, holder.tenant, 1);
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      bump(counts.byPrincipal, holder.principal, -1);
      bump(counts.byTenant, holder.tenant, -1);
    },
  };
}

/**
 * A `text/event-stream` response: `event: sessions` with a JSON `SessionsSnapshot` (as
 * `by` may see it) at once and on every change, `event: signed_out` when the console
 * session ends.
 */
export function sessionsStream(
  deps: AppDeps,
  by: Administrator,
  query: SessionsQuery,
  options: StreamOptions,
): Response {
  const enc = new TextEncoder();
  const pollMs = options.pollMs ?? POLL_MS;
  const taken = options.holder === undefined
    ? { release: () => {} }
    : takeFeed(deps, options.holder);
  if ("refused" in taken) {
    return new Response(`${taken.refused}\n`, {
      status: 429,
      headers: {
        "content-type": "text/plain; charset=utf-8",
        "retry-after": "10",
      },
    });
  }
  const release = taken.release;
  let closed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unregister = () => {};
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;

  const stop = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    unregister();
    release();
    try {
      controllerRef?.close();
    } catch {
      // Already closed by the peer.
    }
  };

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
      unregister = register(deps, stop);
      const send = (text: string) => {
        if (closed) return;
        // desiredSize is the high-water mark (1) less the events queued and not read.
        if ((controller.desiredSize ?? 0) < 1 - MAX_UNREAD_EVENTS) {
          deps.log.warn(
            "console live feed closed: the client does not read it",
          );
          stop();
          return;
        }
        controller.enqueue(enc.encode(text));
      };
      send("retry: 2000\n\n");
      let last = "";
      let seq = 0;
      let lastWrite = Date.now();
      const tick = async () => {
        if (closed) return;
        try {
          if (!(await options.stillAllowed())) {
            send("event: signed_out\ndata: {}\n\n");
            stop();
            return;
          }
          const snap = await sessionsSnapshot(deps, by, query);
          const key = JSON.stringify([snap.rows, snap.live_count]);
          if (key !== last) {
            last = key;
            send(
              `id: ${++seq}\nevent: sessions\ndata: ${
                JSON.stringify(snap)
              }\n\n`,
            );
            lastWrite = Date.now();
          } else if (Date.now() - lastWrite >= KEEPALIVE_MS) {
            send(": keep-alive\n\n");
            lastWrite = Date.now();
          }
        } catch (err) {
          // The store hiccuped: keep the stream, try again on the next poll.
          deps.log.warn("console live feed poll failed", { err });
        }
        if (!closed) timer = setTimeout(tick, pollMs);
      };
      tick();
    },
    cancel() {
      closed = true;
      clearTimeout(timer);
      unregister();
      release();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}
