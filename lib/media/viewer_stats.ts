/**
 * What the viewer experiences, as the browser client reports it (`client.stats`,
 * DECISIONS 6): at most one report a second is taken (more are dropped uncounted); each
 * feeds the app's metrics (first frame once per socket, glass to glass per report,
 * stalls and underruns by what they grew since the socket's previous report), and the
 * latest is kept for the console and the viewers-by-decoder gauge.
 */
import type { AppMetrics } from "../metrics/registry.ts";
import type { ClientMessage } from "./protocol.ts";

export type ClientStats = Extract<ClientMessage, { type: "client.stats" }>;

/** Shortest time between two reports taken, ms. */
export const CLIENT_STATS_MIN_INTERVAL_MS = 1000;
/** A report older than this no longer says what the viewer sees now, ms. */
export const CLIENT_STATS_FRESH_MS = 15_000;

/** One session's viewer reports, across its sockets. */
export class ViewerStats {
  /** The latest report taken and when (epoch ms), or null. */
  latest: { stats: ClientStats; at: number } | null = null;
  #lastAt = -Infinity;
  /** This socket's previous counts and whether its first frame was observed. */
  #prev = { stalls: 0, underruns: 0, firstFrame: false };

  constructor(
    private readonly metrics: AppMetrics,
    private readonly now: () => number,
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
