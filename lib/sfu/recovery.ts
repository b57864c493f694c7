/**
 * Whether the SFU still holds a live session's mountpoint, asked when one of its
 * viewers dropped or could not be opened, and a bounded wait for an SFU that stopped
 * answering (lib/media/sfu_signalling.ts). A Janus that restarted has lost every mountpoint
 * (they live in its memory only) and, started by `deno task sfu`, refuses the service's
 * token: such a session cannot show its avatar again and ends (docs/operations.md).
 */
import type { SfuPort } from "../ports/sfu.ts";

/**
 * How long a live session waits for an SFU that stopped answering before it ends
 * `render_failed` (plus at most one probe, `PROBE_TIMEOUT_MS`).
 */
export const SFU_RECOVERY_MS = 15_000;
/** Bound on one probe, and the pause between two. */
const PROBE_TIMEOUT_MS = 2_000;
const PROBE_INTERVAL_MS = 1_000;

/**
 * `held`: the SFU answered and lists the mountpoint; `gone`: it answered without it
 * (it restarted); `unreachable`: no answer in time, or it refused our credentials.
 */
export type MountpointCheck = "held" | "gone" | "unreachable";

/** One probe: whether the SFU answers and still holds mountpoint `id`. */
export async function checkMountpoint(
  sfu: SfuPort,
  id: number,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<MountpointCheck> {
  try {
    const list = await sfu.listMountpoints(AbortSignal.timeout(timeoutMs));
    return list.some((m) => m.id === id) ? "held" : "gone";
  } catch {
    return "unreachable";
  }
}

/**
 * Probes every `PROBE_INTERVAL_MS` until the SFU answers (`held` or `gone`) or
 * `boundMs` has passed (`unreachable`); `signal` stops the wait (`unreachable`).
 */
export async function awaitMountpoint(
  sfu: SfuPort,
  id: number,
  boundMs: number,
  signal: AbortSignal,
): Promise<MountpointCheck> {
  const deadline = performance.now() + boundMs;
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0 || signal.aborted) return "unreachable";
    await pause(Math.min(PROBE_INTERVAL_MS, left), signal);
    if (signal.aborted) return "unreachable";
    const found = await checkMountpoint(
      sfu,
      id,
      Math.max(1, Math.min(PROBE_TIMEOUT_MS, deadline - performance.now())),
    );
    if (found !== "unreachable") return found;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (its timer cleared). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
