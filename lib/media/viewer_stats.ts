/**
 * What the viewer experiences, as the browser client reports it (`client.stats`,
 * DECISIONS 6): at most one report a second is taken (more are dropped uncounted); each
 * feeds the app's metrics (first frame once per socket, glass to glass per report,
 * stalls and underruns by what they grew since the socket's previous report), and the
 * latest is kept for the viewers-by-decoder gauge and, at most every
 * `PERSIST_EVERY_MS`, in KV for the console's session page (whichever instance serves
 * it), expiring a little after the session stops reporting.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import type { AppMetrics } from "../metrics/registry.ts";
import {
  type ClientMessage,
  clientMessageSchema,
  VIEWER_DECODERS,
} from "./protocol.ts";

export type ClientStats = Extract<ClientMessage, { type: "client.stats" }>;

/**
 * Every decoder's viewer series at zero from the start (once per app): a series that
 * first appears with its first observation is no increase to Prometheus' `rate`, so the
 * first viewers of a decoder would not show on a dashboard.
 */
export function zeroViewerSeries(m: AppMetrics): void {
  for (const decoder of [...VIEWER_DECODERS, "unknown"]) {
    m.viewerFirstFrame.zero({ decoder });
    m.viewerGlassToGlass.zero({ decoder });
    m.viewerStalls.inc({ decoder }, 0);
    m.viewerUnderruns.inc({ decoder }, 0);
  }
}

/** Shortest time between two reports taken, ms. */
export const CLIENT_STATS_MIN_INTERVAL_MS = 1000;
/** A report older than this no longer says what the viewer sees now, ms. */
export const CLIENT_STATS_FRESH_MS = 15_000;
/** How often the latest report is written to KV for the console, at most, ms. */
export const PERSIST_EVERY_MS = 15_000;
/** How long a written report stays in KV, ms. */
const PERSIST_EXPIRE_MS = 120_000;

/** A session's latest viewer report and when it came (epoch ms). */
export interface ViewerReport {
  stats: ClientStats;
  at: number;
}

export function viewerStatsKey(sessionId: string): Deno.KvKey {
  return ["viewer_stats", sessionId];
}

/** The latest viewer report of `sessionId` written to KV, or null (none, or expired). */
export async function readViewerStats(
  deps: Pick<AppDeps, "readKv">,
  sessionId: string,
): Promise<ViewerReport | null> {
  const v = (await kvTry(deps.readKv.get(viewerStatsKey(sessionId)))).value as
    | { stats?: unknown; at?: unknown }
    | null;
  const stats = clientMessageSchema.safeParse(v?.stats);
  if (!stats.success || stats.data.type !== "client.stats") return null;
  return typeof v?.at === "number" ? { stats: stats.data, at: v.at } : null;
}

/** Writes `sessionId`'s latest report to KV (failures logged, never thrown). */
export function persistViewerStats(
  deps: Pick<AppDeps, "kv" | "log">,
  sessionId: string,
): (latest: ViewerReport) => void {
  return (latest) => {
    kvTry(
      deps.kv.set(viewerStatsKey(sessionId), latest, {
        expireIn: PERSIST_EXPIRE_MS,
      }),
    ).catch((err) =>
      deps.log.warn("viewer stats not stored", { session_id: sessionId, err })
    );
  };
}

/** One session's viewer reports, across its sockets. */
export class ViewerStats {
  /** The latest report taken and when (epoch ms), or null. */
  latest: ViewerReport | null = null;
  #lastAt = -Infinity;
  #persistedAt = -Infinity;
  /** This socket's previous counts and whether its first frame was observed. */
  #prev = { stalls: 0, underruns: 0, firstFrame: false };

  constructor(
    private readonly metrics: AppMetrics,
    private readonly now: () => number,
    /** Writes the latest report for the console (see `PERSIST_EVERY_MS`). */
    private readonly persist: (latest: ViewerReport) => void = () => {},
  ) {}

  /** A new socket took over: its counts start from zero. */
  newSocket(): void {
    this.#prev = { stalls: 0, underruns: 0, firstFrame: false };
  }

  /** Takes a report: false when it came too soon after the last (dropped). */
  report(s: ClientStats): boolean {
    const at = this.now();
    if (at - this.#lastAt < CLIENT_STATS_MIN_INTERVAL_MS) return false;
    this.#lastAt = at;
    this.latest = { stats: s, at };
    if (at - this.#persistedAt >= PERSIST_EVERY_MS) {
      this.#persistedAt = at;
      this.persist(this.latest);
    }
    const decoder = s.decoder ?? "unknown";
    const m = this.metrics, p = this.#prev;
    if (s.first_frame_ms !== undefined && !p.firstFrame) {
      p.firstFrame = true;
      m.viewerFirstFrame.observe({ decoder }, s.first_frame_ms / 1000);
    }
    if (s.glass_to_glass_ms_est !== undefined) {
      m.viewerGlassToGlass.observe({ decoder }, s.glass_to_glass_ms_est / 1000);
    }
    // Counts since the socket opened: what grew since its previous report (a count
    // that went down is a client's restart of it: counted from there).
    for (const k of ["stalls", "underruns"] as const) {
      const v = s[k];
      if (v === undefined) continue;
      const grew = v >= p[k] ? v - p[k] : v;
      if (grew > 0) {
        (k === "stalls" ? m.viewerStalls : m.viewerUnderruns).inc(
          { decoder },
          grew,
        );
      }
      p[k] = v;
    }
    return true;
  }

  /** The decoder of a report still fresh, or null. */
  freshDecoder(): string | null {
    const l = this.latest;
    if (!l || this.now() - l.at > CLIENT_STATS_FRESH_MS) return null;
    return l.stats.decoder ?? "unknown";
  }
}
