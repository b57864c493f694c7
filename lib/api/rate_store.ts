/**
 * The rate-limit counters in KV (./rate_limit.ts counts locally and merges here): one
 * `Deno.KvU64` per subject and window, added to by atomic `sum` in batches and read
 * back by `getMany` in chunks. KV's `sum` keeps no expiry (a sum even clears the expiry
 * of the key it adds to), so the keys of old windows are swept by range.
 */

const KV_MUTATIONS_MAX = 1000;
const KV_GET_MANY_MAX = 10;
const SWEEP_BATCH = 500;

/** KV key of one subject's counter in one window (a `Deno.KvU64`). */
export function rateLimitKey(
  window: number,
  subject: string,
): ["rate_limits", number, string] {
  return ["rate_limits", window, subject];
}

/** One subject's counter in one window, and the requests to add to it. */
export interface CounterMerge {
  subject: string;
  window: number;
  count: number;
}

/**
 * Adds each merge's count to its counter, `KV_MUTATIONS_MAX` to a commit; `committed`
 * runs with each chunk once its commit succeeded. Throws on the first failed commit
 * (chunks before it stay merged).
 */
export async function mergeCounters<T extends CounterMerge>(
  kv: Deno.Kv,
  merges: T[],
  committed: (chunk: T[]) => void,
): Promise<void> {
  for (let i = 0; i < merges.length; i += KV_MUTATIONS_MAX) {
    const chunk = merges.slice(i, i + KV_MUTATIONS_MAX);
    const op = kv.atomic();
    for (const m of chunk) {
      op.sum(rateLimitKey(m.window, m.subject), BigInt(m.count));
    }
    const res = await op.commit();
    if (!res.ok) throw new Error("rate-limit merge was not committed");
    committed(chunk);
  }
}

/** The totals in KV of each `[window, subject]` counter (null when absent), in order. */
export async function readCounters(
  kv: Deno.Kv,
  counters: { window: number; subject: string }[],
): Promise<(number | null)[]> {
  const totals: (number | null)[] = new Array(counters.length).fill(null);
  const chunks: number[] = [];
  for (let i = 0; i < counters.length; i += KV_GET_MANY_MAX) chunks.push(i);
  await Promise.all(chunks.map(async (start) => {
    const chunk = counters.slice(start, start + KV_GET_MANY_MAX);
    const got = await kv.getMany<Deno.KvU64[]>(
      chunk.map((c) => rateLimitKey(c.window, c.subject)),
    );
    got.forEach((entry, i) => {
      if (entry.value !== null) totals[start + i] = Number(entry.value.value);
    });
  }));
  return totals;
}

/**
 * Deletes counters of windows before `below`, `SWEEP_BATCH` at most; true when none
 * are left there (any instance may sweep).
 */
export async function sweepCountersBefore(
  kv: Deno.Kv,
  below: number,
): Promise<boolean> {
  const keys: Deno.KvKey[] = [];
  const iter = kv.list({
    start: ["rate_limits"],
    end: ["rate_limits", below],
  }, { limit: SWEEP_BATCH });
  for await (const entry of iter) keys.push(entry.key);
  if (keys.length > 0) {
    const op = kv.atomic();
    for (const key of keys) op.delete(key);
    await op.commit();
  }
  return keys.length < SWEEP_BATCH;
}
