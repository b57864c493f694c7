/**
 * Display formatting shared by console pages and islands (runs on the server and in the
 * browser, so it touches no Deno API).
 */

/** Epoch ms as `2026-11-22 12:00:03 UTC`, or an em dash when unset. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** Seconds as `42 s`, `3 m 05 s` or `2 h 03 m`. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) {
    return "—";
  }
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) {
    return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s`;
  }
  return `${Math.floor(s / 3600)} h ${
    String(Math.floor(s % 3600 / 60)).padStart(2, "0")
  } m`;
}

/** Session statuses that are not terminal (what the live counter counts). */
export const LIVE_STATUSES = [
  "created",
  "activating",
  "active",
  "ending",
] as const;

/** All session statuses, in lifecycle order. */
export const ALL_STATUSES = [
  ...LIVE_STATUSES,
  "ended",
  "ended_with_warnings",
  "failed",
] as const;

/** True when `status` is not terminal. */
export function isLive(status: string): boolean {
  return (LIVE_STATUSES as readonly string[]).includes(status);
}

/** The row shape the sessions table shows (and the live stream sends). */
export interface SessionRow {
  session_id: string;
  tenant_id: string;
  status: string;
  provider_type: string;
  transport: string;
  created_at: number;
  started_at?: number;
  ended_at?: number;
  duration_s?: number;
  /** Why it ended (terminal sessions). */
  end_reason?: string;
}

/** Seconds a session has been (or was) active, from its timestamps when not recorded. */
export function sessionDuration(row: SessionRow, now: number): number | null {
  if (row.duration_s !== undefined) return row.duration_s;
  if (row.started_at === undefined) return null;
  return ((row.ended_at ?? now) - row.started_at) / 1000;
}

/** The console path of a session's detail page. */
export function sessionHref(sessionId: string): string {
  return `/admin/sessions/${encodeURIComponent(sessionId)}`;
}

/**
 * A compact UTC time for table cells: `14:03:09` on the same UTC day as `now`, else
 * `2026-11-21 14:03`. The full time goes in the cell's title.
 */
export function formatShortTime(
  ms: number | null | undefined,
  now: number,
): string {
  if (ms === null || ms === undefined) return "—";
  const iso = new Date(ms).toISOString();
  if (iso.slice(0, 10) === new Date(now).toISOString().slice(0, 10)) {
    return iso.slice(11, 19);
  }
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}

/**
 * An instance id as tables show it: its first 8 characters (ids are random UUIDs, so
 * that tells a handful of instances apart; the full id goes in the cell's title).
 */
export function shortInstanceId(id: string): string {
  return id.slice(0, 8);
}

/** A viewer's `client.stats` report, as the session page shows it. */
export interface ViewerStatsView {
  stats: {
    decoder?: string;
    first_frame_ms?: number;
    jitter_buffer_ms?: number;
    audio_output_latency_ms?: number;
    glass_to_glass_ms_est?: number;
    stalls?: number;
    underruns?: number;
    frames_shown?: number;
    frames_dropped?: number;
  };
  at: number;
}

/**
 * One line of what the viewer's browser client last reported: `webcodecs · first frame
 * 140 ms · jitter buffer 42 ms · 3 underruns · 250 frames shown, 4 dropped · 5 s ago`.
 */
export function viewerStatsText(v: ViewerStatsView, now: number): string {
  const s = v.stats, parts = [s.decoder ?? "decoder not said"];
  if (s.first_frame_ms !== undefined) {
    parts.push(`first frame ${Math.round(s.first_frame_ms)} ms`);
  }
  if (s.glass_to_glass_ms_est !== undefined) {
    parts.push(`glass to glass ~${Math.round(s.glass_to_glass_ms_est)} ms`);
  }
  if (s.jitter_buffer_ms !== undefined) {
    parts.push(`jitter buffer ${Math.round(s.jitter_buffer_ms)} ms`);
  }
  if (s.audio_output_latency_ms !== undefined) {
    parts.push(`audio output ${Math.round(s.audio_output_latency_ms)} ms`);
  }
  if (s.stalls !== undefined) parts.push(`${s.stalls} stalls`);
  if (s.underruns !== undefined) parts.push(`${s.underruns} underruns`);
  if (s.frames_shown !== undefined) {
    parts.push(
      `${s.frames_shown} frames shown` +
        (s.frames_dropped !== undefined ? `, ${s.frames_dropped} dropped` : ""),
    );
  }
  parts.push(`${Math.max(0, Math.round((now - v.at) / 1000))} s ago`);
  return parts.join(" · ");
}
