/**
 * The browser client on an iPhone-shaped Media Source API, in real headless Chromium:
 * `MediaSource` hidden, and a shim exposing Chromium's MediaSource as
 * `ManagedMediaSource` that, as Safari does, starts with `streaming` false and fires
 * `startstreaming` a moment after it opens. The avatar plays (frames decoded,
 * currentTime advancing), nothing is appended while the source is not streaming, and
 * an `endstreaming` pauses appends until the next `startstreaming`. Not a device test:
 * Safari itself is untested here (docs/media-protocol.md says so).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { AvatarPlayer } from "../../client/browser.ts";
import { WAIT } from "./_browser.ts";
import { startPlayerStack, waitPlaying } from "./_player.ts";

/** What the shim records, on `globalThis.mms`. */
interface Shim {
  created: number;
  appends: number;
  appendsWhileNotStreaming: number;
  sources: (MediaSource & { streaming: boolean })[];
}
type Win = { avatarPlayer: AvatarPlayer; mms: Shim };

/** Runs in the page before its scripts: hides MediaSource, exposes the shim. */
function installShim(): void {
  const w = globalThis as unknown as Win & Record<string, unknown>;
  const Native = MediaSource;
  const mms: Shim = {
    created: 0,
    appends: 0,
    appendsWhileNotStreaming: 0,
    sources: [],
  };
  w.mms = mms;
  class ManagedMediaSource extends Native {
    streaming = false;
    constructor() {
      super();
      mms.created++;
      mms.sources.push(this);
      this.addEventListener("sourceopen", () => {
        setTimeout(() => {
          this.streaming = true;
          this.dispatchEvent(new Event("startstreaming"));
        }, 200);
      }, { once: true });
    }
  }
  const append = SourceBuffer.prototype.appendBuffer;
  SourceBuffer.prototype.appendBuffer = function (data: BufferSource) {
    mms.appends++;
    if (!mms.sources.at(-1)?.streaming) mms.appendsWhileNotStreaming++;
    return append.call(this, data);
  };
  delete w.MediaSource;
  w.ManagedMediaSource = ManagedMediaSource;
}

interface Playback {
  time: number;
  frames: number;
  appended: number;
}

function playback(page: Page): Promise<Playback> {
  return page.evaluate(() => {
    const v = document.querySelector("video")!;
    return {
      time: v.currentTime,
      frames: v.getVideoPlaybackQuality().totalVideoFrames,
      appended:
        (globalThis as unknown as Win).avatarPlayer.stats.segmentsAppended,
    };
  });
}

Deno.test("browser client plays through ManagedMediaSource where MediaSource is absent", async (t) => {
  const stack = await startPlayerStack({
    prefix: "mms-e2e-",
    viewport: { width: 390, height: 844 },
  });
  const { page, pageBase } = stack;
  const { problems } = stack.browser;
  await stack.browser.context.addInitScript(installShim);
  try {
    await t.step(
      "the video plays through the shim, appended only while streaming",
      async () => {
        // The MSE path (WebCodecs would take the stream where it exists).
        await page.goto(`${pageBase}/?decoder=video&bg=studio`);
        assert.equal(
          await page.evaluate(() => typeof globalThis.MediaSource),
          "undefined",
        );
        await page.getByRole("button", { name: "Start", exact: true }).click();
        await page.waitForFunction(
          () => (globalThis as unknown as Win).avatarPlayer?.state === "open",
          undefined,
          WAIT,
        );
        await waitPlaying(page, await playback(page), 1.5, 20);
        const shim = await page.evaluate(() => {
          const { mms } = globalThis as unknown as Win;
          return {
            created: mms.created,
            appends: mms.appends,
            appendsWhileNotStreaming: mms.appendsWhileNotStreaming,
            remote: document.querySelector("video")!.disableRemotePlayback,
          };
        });
        assert.ok(shim.created >= 1, "a ManagedMediaSource was created");
        assert.ok(shim.appends > 20, `appends: ${shim.appends}`);
        assert.equal(shim.appendsWhileNotStreaming, 0);
        assert.equal(shim.remote, true);
      },
    );

    await t.step(
      "endstreaming holds appends; startstreaming resumes playback",
      async () => {
        await page.evaluate(() => {
          const source = (globalThis as unknown as Win).mms.sources.at(-1)!;
          source.streaming = false;
          source.dispatchEvent(new Event("endstreaming"));
        });
        const paused = await playback(page);
        // A second of stream arrives (25 segments) and none is appended.
        await page.evaluate(() => new Promise((ok) => setTimeout(ok, 1000)));
        assert.equal((await playback(page)).appended, paused.appended);
        assert.equal(
          await page.evaluate(() =>
            (globalThis as unknown as Win).mms.appendsWhileNotStreaming
          ),
          0,
        );
        await page.evaluate(() => {
          const source = (globalThis as unknown as Win).mms.sources.at(-1)!;
          source.streaming = true;
          source.dispatchEvent(new Event("startstreaming"));
        });
        const resumed = await playback(page);
        await waitPlaying(page, resumed, 1.5, 20);
        assert.ok((await playback(page)).appended > paused.appended + 20);
      },
    );

    await t.step("End ends the session", async () => {
      await page.getByRole("button", { name: "End", exact: true }).click();
      await page.waitForFunction(
        () => (globalThis as unknown as Win).avatarPlayer.state === "ended",
        undefined,
        WAIT,
      );
    });
    assert.deepEqual(problems, []);
  } finally {
    await stack.close();
  }
});
