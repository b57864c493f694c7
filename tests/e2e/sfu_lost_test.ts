/**
 * Janus killed under a playing `webrtc_sfu` session (docs/operations.md, "What happens
 * when"): a real Janus, the real service with SFU_URL pointing at it, the example
 * engine, backend and page, and headless Chromium playing over WebRTC. Janus is killed
 * with SIGKILL mid-session (its mountpoints and the service's token die with it): the
 * session ends `ended_with_warnings` / `render_failed` once the SFU stayed silent for
 * `SFU_RECOVERY_MS`, the page gets `session.ended` and the webhook is sent.
 */
import assert from "node:assert/strict";
import type { AvatarPlayer } from "../../client/browser.ts";
import { SFU_RECOVERY_MS } from "../../lib/sfu/recovery.ts";
import { startOnPage, startPlayerStack } from "./_player.ts";
import { startTestJanus } from "../lib/sfu/_janus.ts";
import { startReceiver } from "../lib/webhooks/_helpers.ts";
import { terminalWebhook } from "../lib/sessions/_ended.ts";
import { requireChromium, WAIT } from "./_browser.ts";

type Win = {
  avatarPlayer: AvatarPlayer;
  ended: unknown;
  seen: string[];
};

Deno.test("webrtc_sfu: Janus killed under a playing session: it ends render_failed (session.ended, webhook) after SFU_RECOVERY_MS, not left active and frozen", async () => {
  await requireChromium();
  const rx = startReceiver();
  const janus = await startTestJanus();
  const stack = await startPlayerStack({
    prefix: "sfu-lost-",
    viewport: { width: 900, height: 900 },
    env: janus.env,
    transport: "webrtc_sfu",
    webhookUrl: rx.url,
  });
  const { client, pageBase, browser } = stack;
  const { page } = browser;
  try {
    const id = (await startOnPage(page, pageBase)).id;
    await page.waitForFunction(
      () =>
        (globalThis as unknown as Win).avatarPlayer.stats.rtc.framesDecoded >
          25,
      undefined,
      WAIT,
    );
    assert.equal((await client.getSession(id)).status, "active");
    await page.evaluate(() => {
      const w = globalThis as unknown as Win;
      w.ended = null;
      w.avatarPlayer.on("ended", (e) => w.ended = e);
      // What the page went through, for a failure's report.
      w.seen = [];
      w.avatarPlayer.on("error", (e) => w.seen.push(`error ${e.code}`));
      w.avatarPlayer.on("state", (e) => w.seen.push(`state ${e.state}`));
    });

    const killedAt = Date.now();
    Deno.kill(janus.pid, "SIGKILL");
    await janus.exited;
    const ended = await page.waitForFunction(
      () => (globalThis as unknown as Win).ended,
      undefined,
      { ...WAIT, timeout: SFU_RECOVERY_MS + 45_000 },
    ).then((h) => h.jsonValue());
    // Not before the bound: the SFU was given SFU_RECOVERY_MS to come back.
    assert.ok(Date.now() - killedAt >= SFU_RECOVERY_MS);
    const seen = await page.evaluate(() => (globalThis as unknown as Win).seen);
    assert.deepEqual(
      ended,
      { status: "ended_with_warnings", reason: "render_failed" },
      `the page saw: ${seen.join(", ")}`,
    );
    const s = await client.getSession(id);
    assert.equal(s.status, "ended_with_warnings");
    assert.equal(s.end_reason, "render_failed");
    assert.equal(
      s.warning,
      `the SFU did not answer for ${SFU_RECOVERY_MS / 1000} s`,
    );
    const hook = await terminalWebhook(rx, id);
    assert.equal(hook.type, "session.ended");
    assert.deepEqual(
      {
        status: (hook.data as Record<string, unknown>).status,
        end_reason: (hook.data as Record<string, unknown>).end_reason,
      },
      { status: "ended_with_warnings", end_reason: "render_failed" },
    );
  } finally {
    await stack.close();
    await janus.stop();
    await rx.close();
  }
});
