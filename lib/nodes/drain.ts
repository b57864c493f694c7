/**
 * Draining an instance for a restart (`NODE_DRAIN_S`): on SIGTERM it takes no new
 * session (creates and handoffs answer 503 `AVTR_RENDER_CAPACITY`, so a control plane
 * tries its next node), says so in its registry record and `/readyz`, and keeps serving
 * the sessions it holds until they end or the drain time is up; only then does it stop
 * (and whatever it still holds ends as `instance_lost`).
 */
import type { AppDeps } from "../deps.ts";
import { mediaHubOf } from "../media/service.ts";
import { announceInstance } from "../media/presence.ts";

/** How often a drain looks whether the instance still holds sessions. */
const DRAIN_POLL_MS = 250;

/** Sessions this instance holds: live ones, and created ones whose credentials it keeps. */
export function heldSessions(deps: AppDeps): number {
  return new Set([...deps.vault.ids(), ...mediaHubOf(deps).live.keys()]).size;
}

/**
 * Drains: takes no new session from now on, and resolves once no session is held, after
 * `timeoutMs`, or when `stop` aborts, with the number still held.
 */
export async function drain(
  deps: AppDeps,
  timeoutMs: number,
  stop: AbortSignal = new AbortController().signal,
): Promise<number> {
  deps.draining = true;
  await announceInstance(deps);
  const deadline = performance.now() + timeoutMs;
  deps.log.info("draining: no new sessions; waiting for the held ones to end", {
    held: heldSessions(deps),
    timeout_s: Math.round(timeoutMs / 1000),
  });
  while (
    heldSessions(deps) > 0 && performance.now() < deadline && !stop.aborted
  ) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, DRAIN_POLL_MS);
      function done() {
        clearTimeout(timer);
        stop.removeEventListener("abort", done);
        resolve();
      }
      stop.addEventListener("abort", done, { once: true });
    });
  }
  return heldSessions(deps);
}
