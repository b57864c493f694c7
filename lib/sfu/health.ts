/**
 * Whether the SFU answers, cheaply: one probe at a time, its result kept for a few
 * seconds (`auto` asks on every create, `/readyz` on every probe).
 */
import type { AppDeps } from "../deps.ts";

/** How long an answer is reused: a success longer than a failure. */
const OK_TTL_MS = 5_000;
const FAIL_TTL_MS = 2_000;
/** Bound on one probe. */
const PROBE_TIMEOUT_MS = 1_500;

interface Cached {
  ok: boolean;
  at: number;
  inflight?: Promise<boolean>;
}

const cache = new WeakMap<AppDeps, Cached>();

/** True when an SFU is configured and answered its last (recent) probe. */
export async function sfuHealthy(deps: AppDeps): Promise<boolean> {
  const sfu = deps.sfu;
  if (!sfu) return false;
  const now = deps.now();
  const c = cache.get(deps);
  if (c?.inflight) return await c.inflight;
  if (c && now - c.at < (c.ok ? OK_TTL_MS : FAIL_TTL_MS)) return c.ok;
  const entry: Cached = c ?? { ok: false, at: 0 };
  entry.inflight = sfu.health(AbortSignal.timeout(PROBE_TIMEOUT_MS)).then(
    () => true,
    () => false,
  ).then((ok) => {
    entry.ok = ok;
    entry.at = deps.now();
    entry.inflight = undefined;
    return ok;
  });
  cache.set(deps, entry);
  return await entry.inflight;
}

/** The SFU's last probed answer (true: it answered), or undefined before any probe. */
export function lastSfuHealth(deps: AppDeps): boolean | undefined {
  const c = cache.get(deps);
  return c && c.at > 0 ? c.ok : undefined;
}

/** Records a failure seen elsewhere (a create that could not reach the SFU). */
export function markSfuFailing(deps: AppDeps): void {
  cache.set(deps, { ok: false, at: deps.now() });
}
