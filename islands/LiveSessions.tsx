/**
 * The sessions table and live counter. Server-rendered with the first snapshot; once
 * hydrated it follows `/admin/sessions/events` (server-sent events) and re-renders on
 * every snapshot. EventSource reconnects by itself after a drop; the server sends a full
 * snapshot on every (re)connect, so the table resumes where the stream left off.
 */
import { useEffect, useState } from "preact/hooks";
// The live table is the sessions page's own table, hydrated: the same components
// render it on the server and in the browser.
import { DataTable, EmptyState, StatusBadge } from "../components/ui.tsx";
import {
  formatDuration,
  formatShortTime,
  formatTime,
  sessionDuration,
  sessionHref,
  type SessionRow,
} from "../lib/console/format.ts";

export interface LiveSessionsProps {
  rows: SessionRow[];
  liveCount: number;
  /** Server clock at render (epoch ms). */
  now: number;
  /** The SSE endpoint with the page's filters. */
  streamUrl: string;
  /** True when the table is filtered (changes the empty-state text). */
  filtered: boolean;
  [key: string]: unknown;
}

/** One snapshot as the stream sends it. */
export interface SessionsSnapshot {
  rows: SessionRow[];
  live_count: number;
  now: number;
}

type Link = "static" | "live" | "reconnecting" | "stopped";

const LINK_TEXT: Record<Link, string> = {
  static: "Not live",
  live: "Live",
  reconnecting: "Reconnecting…",
  stopped: "Live updates stopped: reload the page",
};

/** A time cell: compact (relative to `now`'s day), the full UTC time as its title. */
function TimeCell(props: { label: string; ms?: number; now: number }) {
  return (
    <td class="nowrap" data-label={props.label} title={formatTime(props.ms)}>
      {formatShortTime(props.ms, props.now)}
    </td>
  );
}

export default function LiveSessions(props: LiveSessionsProps) {
  const [snap, setSnap] = useState<SessionsSnapshot>({
    rows: props.rows,
    live_count: props.liveCount,
    now: props.now,
  });
  const [link, setLink] = useState<Link>("static");
  const [skew, setSkew] = useState(0);
  const [, setTick] = useState(0);

  useEffect(() => {
    const es = new EventSource(props.streamUrl);
    es.addEventListener("open", () => setLink("live"));
    es.addEventListener("sessions", (e) => {
      const next = JSON.parse((e as MessageEvent).data) as SessionsSnapshot;
      setSkew(next.now - Date.now());
      setSnap(next);
      setLink("live");
    });
    es.addEventListener("signed_out", () => {
      es.close();
      setLink("stopped");
    });
    es.addEventListener("error", () => {
      setLink(
        es.readyState === EventSource.CLOSED ? "stopped" : "reconnecting",
      );
    });
    const timer = setInterval(() => setTick((n) => n + 1), 1000);
    return () => {
      es.close();
      clearInterval(timer);
    };
  }, [props.streamUrl]);

  const now = link === "static" ? snap.now : Date.now() + skew;
  return (
    <div class="live-sessions">
      <div class="live-bar">
        <p class="counter">
          <span class="counter-value" data-testid="live-count">
            {snap.live_count}
          </span>{" "}
          live {snap.live_count === 1 ? "session" : "sessions"}
        </p>
        <p class={`link link-${link}`} role="status" aria-live="polite">
          <span class="dot" aria-hidden="true" />
          {LINK_TEXT[link]}
        </p>
      </div>
      {snap.rows.length === 0
        ? (
          <EmptyState title="No sessions">
            {props.filtered
              ? "No session matches these filters yet. New ones appear here as they are created."
              : "Sessions appear here as soon as they are created with POST /v1/sessions."}
          </EmptyState>
        )
        : (
          <DataTable
            label="Sessions"
            columns={[
              "Session",
              "Tenant",
              "Status",
              "Provider",
              "Transport",
              "Created (UTC)",
              "Started",
              "Ended",
              "End reason",
              { label: "Duration", class: "num" },
            ]}
          >
            {snap.rows.map((r) => (
              <tr key={r.session_id} data-session-id={r.session_id}>
                <td class="mono" data-label="Session">
                  <a href={sessionHref(r.session_id)}>{r.session_id}</a>
                </td>
                <td data-label="Tenant">{r.tenant_id}</td>
                <td data-label="Status">
                  <StatusBadge status={r.status} />
                </td>
                <td data-label="Provider">{r.provider_type}</td>
                <td data-label="Transport">{r.transport}</td>
                <TimeCell label="Created" ms={r.created_at} now={snap.now} />
                <TimeCell label="Started" ms={r.started_at} now={snap.now} />
                <TimeCell label="Ended" ms={r.ended_at} now={snap.now} />
                <td data-label="End reason" data-field="end-reason">
                  {r.end_reason ?? <span class="muted">—</span>}
                </td>
                <td class="num nowrap" data-label="Duration">
                  {formatDuration(sessionDuration(r, now))}
                </td>
              </tr>
            ))}
          </DataTable>
        )}
    </div>
  );
}
