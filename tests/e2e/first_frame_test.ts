/**
 * `websocket_fmp4` playback starts on the media itself: the video is started when a
 * segment has been appended, not only by the player's periodic 250-ms check, so a late
 * or throttled check (a background tab runs timers about once a second) cannot hold the
 * start back. Shown in real headless Chromium with that periodic check suppressed in
 * the page: the avatar still plays.
 */
import assert from "node:assert/strict";
import { startOnPage, startPlayerStack, waitPlaying } from "./_player.ts";

type Win = { suppressedTicks: number };

/** Runs in the page before its scripts: every 250-ms interval is replaced by a no-op. */
function suppressPlayerTick(): void {
  const w = globalThis as unknown as Win;
  const native = globalThis.setInterval;
  w.suppressedTicks = 0;
  globalThis.setInterval = ((
    fn: TimerHandler,
    ms?: number,
    ...args: unknown[]
  ) => {
    if (ms === 250) {
      w.suppressedTicks++;
      return native(() => {}, 3_600_000);
    }
    return native(fn, ms, ...args);
  }) as typeof setInterval;
}

Deno.test("websocket_fmp4 playback starts when media is appended, without the player's periodic check", async () => {
  const stack = await startPlayerStack({
    prefix: "first-frame-e2e-",
    viewport: { width: 600, height: 600 },
    transport: "websocket_fmp4",
  });
  const { page, pageBase } = stack;
  await stack.browser.context.addInitScript(suppressPlayerTick);
  try {
    await startOnPage(page, pageBase);
    assert.ok(
      await page.evaluate(() =>
        (globalThis as unknown as Win).suppressedTicks
      ) >= 1,
      "the player's periodic check was suppressed",
    );
    await waitPlaying(page, { time: 0, frames: 0 }, 0.5, 5);
    assert.deepEqual(stack.browser.problems, []);
  } finally {
    await stack.close();
  }
});
