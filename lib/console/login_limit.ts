/**
 * Sign-in attempt limiting: failed console sign-ins are counted per client address in a
 * fixed 15-minute window in KV (shared by every instance); past the limit the form
 * refuses further attempts from that address until the window ends.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";

/** Failed sign-ins allowed per client address per window. */
export const LOGIN_MAX_FAILURES = 10;
/** The window length. */
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;

function windowKey(address: string, now: number): Deno.KvKey {
  return [
    "console_login_failures",
    address,
    Math.floor(now / LOGIN_WINDOW_MS),
  ];
}

/** Seconds until `address` may try again, or 0 when it may try now. */
export async function loginBlockedFor(
  deps: AppDeps,
  address: string,
): Promise<number> {
  const now = deps.now();
  const entry = await kvTry(deps.kv.get<number>(windowKey(address, now)));
  const failures = entry.value ?? 0;
  if (failures < LOGIN_MAX_FAILURES) return 0;
  const windowEnd = (Math.floor(now / LOGIN_WINDOW_MS) + 1) * LOGIN_WINDOW_MS;
  return Math.max(1, Math.ceil((windowEnd - now) / 1000));
}

/** Counts one failed sign-in from `address`. */
export async function recordLoginFailure(
  deps: AppDeps,
  address: string,
): Promise<void> {
  const key = windowKey(address, deps.now());
  // A checked read-modify-write (a `sum` cannot carry an expiry): retried on conflict.
  // The expiry only sets the earliest deletion; the window index in the key bounds use.
  for (let attempt = 0; attempt < 10; attempt++) {
    const entry = await kvTry(deps.kv.get<number>(key));
    const res = await kvTry(
      deps.kv.atomic().check(entry).set(key, (entry.value ?? 0) + 1, {
        expireIn: LOGIN_WINDOW_MS * 2,
      }).commit(),
    );
    if (res.ok) return;
  }
  // Ten lost races mean many concurrent failures from one address: enough counted.
}
