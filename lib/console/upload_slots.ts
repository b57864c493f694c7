/**
 * How many photo uploads a process reads at once. An upload's body (up to 8 MiB and the
 * form) is held in memory while it arrives, for up to two minutes: unbounded, 64
 * stalled uploads of one signed-in console took a process from 83 to 631 MiB. Each
 * tenant reads one at a time and the process `MAX_UPLOAD_READS`, so a tenant that
 * stalls its own uploads holds one slot, and the memory stays bounded.
 */
import type { AppDeps } from "../deps.ts";

/** Upload bodies a process reads at once. */
export const MAX_UPLOAD_READS = 4;

const reading = new WeakMap<AppDeps, Map<string, number>>();

/**
 * A slot to read `tenant`'s upload in, released by calling what it returns; null when
 * the tenant already has one being read or the process has `MAX_UPLOAD_READS`.
 */
export function takeUploadSlot(
  deps: AppDeps,
  tenant: string,
): (() => void) | null {
  let byTenant = reading.get(deps);
  if (!byTenant) reading.set(deps, byTenant = new Map());
  if (byTenant.has(tenant) || byTenant.size >= MAX_UPLOAD_READS) return null;
  byTenant.set(tenant, 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    byTenant.delete(tenant);
  };
}
