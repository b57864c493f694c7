/**
 * Sign-in attempt limiting: failed console sign-ins are counted per client address (IPv6
 * by /64) in a fixed 15-minute window in KV (shared by every instance); past the limit the form
 * refuses further attempts from that address until the window ends.
 *
 * The check and the count are one atomic step: an attempt first reserves a place in the
 * window (a versionstamp-checked increment that commits only while the count is under
 * the limit), then the credential is checked, and only a sign-in that succeeds gives its
 * place back. So N parallel wrong keys can never be checked more than the limit allows.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import { addressGroup } from "../api/rate_subjects.ts";

/** Failed sign-ins allowed per client address per window. */
export const LOGIN_MAX_FAILURES = 10;
/** The window length. */
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/** Lost commit races before an attempt gives up (and is refused for a second). */
const MAX_RACES = 64;

/**
 * The window of `address`'s group (`addressGroup`: IPv6 by /64, as the REST rate limits
 * count it): one host commonly holds a whole /64, and counting each of its addresses
 * apart would give it 2^64 windows (and a KV write for each).
 */
function windowKey(address: string, now: number): Deno.KvKey {
  return [
    "console_login_failures",
    addressGroup(address),
    Math.floor(now / LOGIN_WINDOW_MS),
  ];
}

/** An attempt that may go on (`release` gives its place back) or must wait. */
export type LoginReservation =
  | { ok: true; release: () => Promise<void> }
  | { ok: false; retryAfterS: number };

/**
 * Reserves one attempt for `address`: counts it as a failure in the current window,
 * atomically with the check that the window still has room. Refused (with the seconds
 * until the window ends) when it has none. Call `release` when the sign-in succeeds.
 */
export async function reserveLoginAttempt(
  deps: AppDeps,
  address: string,
): Promise<LoginReservation> {
  const now = deps.now();
  const key = windowKey(address, now);
  // A `sum` cannot carry an expiry or a bound: a checked read-modify-write, retried when
  // a concurrent attempt committed first. The expiry only sets the earliest deletion;
  // the window index in the key bounds use.
  for (let race = 0; race < MAX_RACES; race++) {
    const entry = await kvTry(deps.kv.get<number>(key));
    const failures = entry.value ?? 0;
    if (failures >= LOGIN_MAX_FAILURES) {
      const windowEnd = (Math.floor(now / LOGIN_WINDOW_MS) + 1) *
        LOGIN_WINDOW_MS;
      return {
        ok: false,
        retryAfterS: Math.max(1, Math.ceil((windowEnd - now) / 1000)),
      };
    }
    const res = await kvTry(
      deps.kv.atomic().check(entry).set(key, failures + 1, {
        expireIn: LOGIN_WINDOW_MS * 2,
      }).commit(),
    );
    if (res.ok) return { ok: true, release: () => release(deps, key) };
  }
  // So many concurrent attempts from one address: refuse this one, briefly.
  return { ok: false, retryAfterS: 1 };
}

/** Gives back one reserved attempt (a successful sign-in is not a failure). */
async function release(deps: AppDeps, key: Deno.KvKey): Promise<void> {
  for (let race = 0; race < MAX_RACES; race++) {
    const entry = await kvTry(deps.kv.get<number>(key));
    if (!entry.value) return;
    const res = await kvTry(
      deps.kv.atomic().check(entry).set(key, entry.value - 1, {
        expireIn: LOGIN_WINDOW_MS * 2,
      }).commit(),
    );
    if (res.ok) return;
  }
}
