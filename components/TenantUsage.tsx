/**
 * A tenant's usage over the last 24 hours and 30 days: sessions that ended and minutes
 * active, read from the per-tenant counters the end commit keeps (lib/sessions/usage.ts).
 */
import type { UsageTotal } from "../lib/sessions.ts";
import { DataTable } from "./ui.tsx";

/** Minutes with one decimal, from milliseconds. */
function minutes(ms: number): string {
  return (ms / 60_000).toFixed(1);
}

export function TenantUsage(
  props: { usage: { last24h: UsageTotal; last30d: UsageTotal } },
) {
  const rows: [string, string, UsageTotal][] = [
    ["24h", "Last 24 hours", props.usage.last24h],
    ["30d", "Last 30 days", props.usage.last30d],
  ];
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage</h2>
      <DataTable
        label="Usage"
        columns={[
          "Window",
          { label: "Sessions ended", class: "num" },
          { label: "Of which active", class: "num" },
          { label: "Minutes active", class: "num" },
        ]}
      >
        {rows.map(([id, label, u]) => (
          <tr key={id} data-usage={id}>
            <td data-label="Window">{label}</td>
            <td class="num" data-label="Sessions ended" data-field="sessions">
              {u.sessions}
            </td>
            <td class="num" data-label="Of which active">
              {u.active_sessions}
            </td>
            <td
              class="num"
              data-label="Minutes active"
              data-field="active-ms"
              data-value={u.active_ms}
            >
              {minutes(u.active_ms)}
            </td>
          </tr>
        ))}
      </DataTable>
      <p class="help">
        Counted when sessions end, in hourly and daily UTC buckets: the current
        hour and the 23 before it, the current day and the 29 before it.
      </p>
    </section>
  );
}
