/**
 * Pacing of the render loop: frames are due on the wall clock (never slower than real
 * time); a loop that wakes late produces the missing frames at once, up to a bound.
 */

/** Monotonic time and timers for the render loop; tests inject their own. */
export interface RenderClock {
  now(): number;
  /** Returns a handle for `clearTimer`. */
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(id: unknown): void;
}

export const realClock: RenderClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimer: (id) => clearTimeout(id as number),
};

/**
 * How many frames to produce now: `produce` frames (only the last is drawn), and
 * `rebase` frames of wall time to forgive when the loop fell further behind than
 * `maxCatchUp` (the stream's timestamps stay continuous; it only runs late).
 */
export function planTicks(
  elapsedMs: number,
  produced: number,
  fps: number,
  maxCatchUp: number,
): { produce: number; rebase: number } {
  const due = Math.floor(elapsedMs * fps / 1000) + 1;
  const behind = Math.max(0, due - produced);
  const produce = Math.min(behind, maxCatchUp);
  return { produce, rebase: behind - produce };
}
