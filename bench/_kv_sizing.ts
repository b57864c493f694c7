/**
 * KV operations per session-minute, from the service's own `/metrics`
 * (`avatar_kv_operations_total{op,prefix,result}`) read before and after a busy
 * window: what each live session costs the store, by operation and key prefix (the
 * sizing of docs/monitoring.md).
 */

/** The bearer token the benches' service answers `/metrics` to. */
export const METRICS_TOKEN = "bench-metrics-token-0123456789abcdef";

/** The service's `/metrics` exposition now. */
export async function metricsText(base: string): Promise<string> {
  const res = await fetch(`${base}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return await res.text();
}

/** `op prefix` → count, summed over results, as the service counts them now. */
export async function kvCounts(base: string): Promise<Map<string, number>> {
  const text = await metricsText(base);
  const out = new Map<string, number>();
  for (
    const m of text.matchAll(
      /^avatar_kv_operations_total\{op="([a-z_]+)",prefix="([a-z_]+)",result="[a-z]+"\} (\d+)$/gm,
    )
  ) {
    const key = `${m[1]} ${m[2]}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

/** Rows of what grew from `before` to `after`, per session and minute, largest first. */
export function perSessionMinute(
  before: Map<string, number>,
  after: Map<string, number>,
  sessions: number,
  ms: number,
): Array<{ op: string; prefix: string; per_session_minute: number }> {
  const rows = [];
  for (const [key, n] of after) {
    const grew = n - (before.get(key) ?? 0);
    if (grew <= 0) continue;
    const [op, prefix] = key.split(" ");
    rows.push({
      op,
      prefix,
      per_session_minute: Math.round(grew / sessions / (ms / 60_000) * 10) / 10,
    });
  }
  return rows.sort((a, b) => b.per_session_minute - a.per_session_minute);
}
