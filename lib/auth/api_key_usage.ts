/**
 * When each API key was last used (DECISIONS 9): counted in memory per request and merged
 * into KV in batches (`startLastUsedFlusher`), never written per request.
 */
import type { AppDeps } from "../deps.ts";

/** How often in-memory `last_used_at` stamps are merged into KV. */
export const LAST_USED_FLUSH_MS = 1000;
const FLUSH_BATCH = 100;

/** `["api_keys_last_used", keyId]` → `Deno.KvU64` epoch ms (merged with `max`). */
export function apiKeyLastUsedKey(keyId: string): Deno.KvKey {
  return ["api_keys_last_used", keyId];
}

const pendingUse = new WeakMap<AppDeps, Map<string, number>>();

/**
 * A key's `last_used_at`: the later of the stamp stored in KV and the one still pending
 * in memory.
 */
export function lastUsedOf(
  deps: AppDeps,
  keyId: string,
  stored: Deno.KvU64 | null,
): number | undefined {
  const pending = pendingUse.get(deps)?.get(keyId);
  const s = stored === null ? undefined : Number(stored.value);
  if (pending === undefined) return s;
  return s === undefined ? pending : Math.max(s, pending);
}

/** Records that `keyId` authenticated a request now (memory only; flushed later). */
export function noteKeyUsed(deps: AppDeps, keyId: string): void {
  const pending = pendingUse.get(deps);
  if (pending === undefined) return;
  const t = deps.now();
  if ((pending.get(keyId) ?? -1) < t) pending.set(keyId, t);
}

/**
 * Merges the pending `last_used_at` stamps into KV with atomic `max` (so instances never
 * move a stamp backwards), in batches of 100 keys. Stamps whose commit fails are kept for
 * the next flush.
 */
export async function flushLastUsed(deps: AppDeps): Promise<void> {
  const pending = pendingUse.get(deps);
  if (pending === undefined || pending.size === 0) return;
  const batch = [...pending];
  pending.clear();
  for (let i = 0; i < batch.length; i += FLUSH_BATCH) {
    const part = batch.slice(i, i + FLUSH_BATCH);
    const op = deps.kv.atomic();
    for (const [keyId, t] of part) {
      op.max(apiKeyLastUsedKey(keyId), BigInt(t));
    }
    let ok = false;
    try {
      ok = (await op.commit()).ok;
    } catch (err) {
      deps.log.warn("last_used_at flush failed", { err });
    }
    if (!ok) {
      for (const [keyId, t] of part) {
        if ((pending.get(keyId) ?? -1) < t) pending.set(keyId, t);
      }
    }
  }
}

/**
 * Starts counting key use on `deps` and merging it into KV every `LAST_USED_FLUSH_MS`;
 * on close the timer stops and a last flush runs (before KV closes).
 */
export function startLastUsedFlusher(deps: AppDeps): void {
  if (pendingUse.has(deps)) return;
  pendingUse.set(deps, new Map());
  let flushing: Promise<void> | null = null;
  const tick = () => {
    if (flushing) return;
    flushing = flushLastUsed(deps).finally(() => {
      flushing = null;
    });
  };
  const timer = setInterval(tick, LAST_USED_FLUSH_MS);
  deps.onClose.push(async () => {
    clearInterval(timer);
    if (flushing) await flushing;
    await flushLastUsed(deps);
    pendingUse.delete(deps);
  });
}
