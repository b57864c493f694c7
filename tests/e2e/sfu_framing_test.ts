/**
 * A photo avatar prepared in the portrait framing (DECISIONS 12) over WebRTC
 * (`webrtc_sfu`): a real Janus, the real service, the example page in Chromium; the
 * video the browser decodes is the framing's 720×1280 (screenshot:
 * test-output/screenshots/sfu-portrait.png).
 */
import assert from "node:assert/strict";
import type { AvatarPlayer } from "../../client/browser.ts";
import { OPERATOR } from "../../lib/principal.ts";
import { addPhotoAvatar } from "../../lib/photo/mod.ts";
import { startOnPage, startPlayerStack } from "./_player.ts";
import { startTestJanus } from "../lib/sfu/_janus.ts";
import { requireChromium, SHOTS, WAIT } from "./_browser.ts";

type Win = { avatarPlayer: AvatarPlayer };

const HOPPER = Deno.readFileSync(
  new URL("../fixtures/photo/grace_hopper.jpg", import.meta.url),
);

Deno.test("webrtc_sfu: a portrait-framed photo avatar plays at 720×1280", async () => {
  await requireChromium();
  const janus = await startTestJanus();
  const stack = await startPlayerStack({
    prefix: "sfu-framing-e2e-",
    viewport: { width: 900, height: 900 },
    env: janus.env,
    transport: "webrtc_sfu",
  });
  const { page, problems } = stack.browser;
  try {
    // Tenant `admin`: the example backend's.
    const photo = await addPhotoAvatar(stack.service.app.deps, OPERATOR, {
      tenantId: "admin",
      name: "Grace",
      bytes: HOPPER,
      consentBy: "test",
      framing: "portrait",
    });
    // (On `studio`: the page's default, transparent, sends the colour over its alpha,
    // 720×2560.)
    await startOnPage(
      page,
      stack.pageBase,
      `avatar=${photo.avatarId}&bg=studio`,
    );
    await page.waitForFunction(
      () => {
        const p = (globalThis as unknown as Win).avatarPlayer;
        const v = document.querySelector("video")!;
        return !v.paused && p.stats.rtc.framesDecoded > 25 &&
          p.stats.rtc.audioPacketsReceived > 0;
      },
      undefined,
      WAIT,
    );
    const size = await page.evaluate(() => {
      const v = document.querySelector("video")!;
      return [v.videoWidth, v.videoHeight];
    });
    assert.deepEqual(size, [720, 1280]);
    assert.equal(
      await page.evaluate(() =>
        (globalThis as unknown as Win).avatarPlayer.stats.decoder
      ),
      "webrtc",
    );
    await page.screenshot({
      path: new URL("sfu-portrait.png", SHOTS).pathname,
    });
    assert.deepEqual(problems, []);
  } finally {
    await stack.close();
    await janus.stop();
  }
});
