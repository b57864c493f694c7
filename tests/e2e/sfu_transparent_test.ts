/**
 * A transparent avatar over WebRTC (`webrtc_sfu`): a real Janus, the real service, the
 * example page. The offer says `alpha: stacked`, the stacked-alpha video track is drawn
 * onto a WebGL canvas as it is presented, and the page shows through around the avatar
 * (screenshot: test-output/screenshots/transparent-webrtc.png).
 */
import assert from "node:assert/strict";
import type { AvatarPlayer } from "../../client/browser.ts";
import { startOnPage, startPlayerStack } from "./_player.ts";
import { startTestJanus } from "../lib/sfu/_janus.ts";
import { requireChromium, WAIT } from "./_browser.ts";
import { checkTransparent } from "./_transparent.ts";

type Win = { avatarPlayer: AvatarPlayer };

Deno.test("webrtc_sfu: a transparent avatar shows the page around it", async () => {
  await requireChromium();
  const janus = await startTestJanus();
  const stack = await startPlayerStack({
    prefix: "sfu-alpha-e2e-",
    viewport: { width: 900, height: 900 },
    env: janus.env,
    transport: "webrtc_sfu",
  });
  const { page, problems } = stack.browser;
  try {
    await page.addInitScript(() => {
      const w = globalThis as unknown as { offers: unknown[] };
      w.offers = [];
      const Native = WebSocket;
      globalThis.WebSocket = class extends Native {
        constructor(url: string | URL, protocols?: string | string[]) {
          super(url, protocols);
          this.addEventListener("message", (e) => {
            if (typeof e.data !== "string") return;
            const m = JSON.parse(e.data);
            if (m.type === "webrtc.offer") w.offers.push(m.alpha ?? null);
          });
        }
      };
    });
    await startOnPage(page, stack.pageBase, "bg=transparent");
    await page.waitForFunction(
      () => {
        const v = document.querySelector("video")!;
        return (globalThis as unknown as Win).avatarPlayer.stats.rtc
              .framesDecoded > 20 && v.hidden && v.currentTime > 0.5;
      },
      undefined,
      WAIT,
    );
    assert.deepEqual(
      await page.evaluate(() =>
        (globalThis as unknown as { offers: unknown[] }).offers
      ),
      ["stacked"],
    );
    assert.equal(
      await page.evaluate(() =>
        (globalThis as unknown as Win).avatarPlayer.stats.decoder
      ),
      "webrtc",
    );
    await checkTransparent(page, "transparent-webrtc");
    assert.deepEqual(problems, []);
  } finally {
    await stack.close();
    await janus.stop();
  }
});
