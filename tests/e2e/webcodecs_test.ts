/**
 * WebCodecs playback of `websocket_fmp4` in real headless Chromium, end to end: the real
 * service and the example engine on loopback, the example page and the bundled browser
 * client. The avatar plays on a canvas with moving video and an advancing audio clock;
 * a takeover (dropped socket) starts a new stream whose GOP burst is skipped to the live
 * edge; a transparent avatar shows the page behind it, not inside it (screenshots:
 * test-output/screenshots/transparent-*.png), on the WebCodecs and the MSE paths and
 * without WebGL; with
 * `VideoDecoder` deleted the same page plays over MSE.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { AvatarPlayer, PlayerStats } from "../../client/browser.ts";
import { replyFor } from "../../scripts/example_engine.ts";
import { WAIT } from "./_browser.ts";
import { checkTransparent } from "./_transparent.ts";
import { startOnPage, startPlayerStack } from "./_player.ts";

type Win = { avatarPlayer: AvatarPlayer };

function stats(page: Page): Promise<PlayerStats> {
  return page.evaluate(() => (globalThis as unknown as Win).avatarPlayer.stats);
}

/** Waits until the WebCodecs path has drawn `frames` and heard `ms` more. */
async function waitDrawing(page: Page, frames: number, ms: number) {
  const from = (await stats(page)).webcodecs;
  await page.waitForFunction(
    ([f, t]) => {
      const w = (globalThis as unknown as Win).avatarPlayer.stats.webcodecs;
      return w.framesDrawn >= f && (w.clockMs ?? -1) >= t;
    },
    [from.framesDrawn + frames, (from.clockMs ?? 0) + ms],
    WAIT,
  );
}

/** Ends the page's session (render slots are few: each step starts its own). */
async function endOnPage(page: Page): Promise<void> {
  await page.getByRole("button", { name: "End", exact: true }).click();
  await page.waitForFunction(
    () => (globalThis as unknown as Win).avatarPlayer.state === "ended",
    undefined,
    WAIT,
  );
}

/** A digest of the canvas's pixels (the 2D path's canvas). */
function canvasDigest(page: Page): Promise<number> {
  return page.evaluate(() => {
    const c = document.querySelector(
      "canvas.avatar-canvas",
    ) as HTMLCanvasElement;
    const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
    let h = 0;
    for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) >>> 0;
    return h;
  });
}

Deno.test("WebCodecs playback: plays, jumps to live after a takeover, stands transparent, falls back to MSE", async (t) => {
  const stack = await startPlayerStack({
    prefix: "webcodecs-e2e-",
    viewport: { width: 900, height: 900 },
  });
  const { page, pageBase } = stack;
  const { problems } = stack.browser;
  try {
    await t.step(
      "the avatar plays on a canvas with moving video and audio",
      async () => {
        await startOnPage(page, pageBase, "bg=studio");
        await waitDrawing(page, 25, 1000);
        // The first stream is AAC; the player asks for Opus (media.config) and
        // plays the fresh Opus stream that follows.
        await page.waitForFunction(
          () =>
            (globalThis as unknown as {
              avatarPlayer: { stats: { webcodecs: { audioCodec: string } } };
            }).avatarPlayer.stats.webcodecs.audioCodec === "opus",
          undefined,
          WAIT,
        );
        await waitDrawing(page, 25, 1000);
        const s = await stats(page);
        assert.equal(s.decoder, "webcodecs");
        assert.equal(s.streams, 2);
        assert.equal(
          await page.evaluate(() => document.querySelector("video")!.hidden),
          true,
        );
        const first = await canvasDigest(page);
        await page.waitForFunction(
          (d) => {
            const c = document.querySelector(
              "canvas.avatar-canvas",
            ) as HTMLCanvasElement;
            const px =
              c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
            let h = 0;
            for (let i = 0; i < px.length; i += 7) h = (h * 31 + px[i]) >>> 0;
            return h !== d;
          },
          first,
          WAIT,
        );
        // The audio clock runs with the wall clock (no stall over two seconds).
        const a = (await stats(page)).webcodecs;
        await new Promise((r) => setTimeout(r, 2000));
        const b = (await stats(page)).webcodecs;
        assert.ok(
          b.clockMs! - a.clockMs! > 1500,
          `clock ${a.clockMs} → ${b.clockMs}`,
        );
        assert.ok(
          b.framesDrawn - a.framesDrawn > 30,
          `${b.framesDrawn - a.framesDrawn} frames drawn`,
        );
        // The page told the service what its viewer saw (client.stats): its first
        // frame, in the service's metrics.
        const metrics = stack.service.app.deps.metrics;
        const deadline = Date.now() + 10_000;
        let text = "";
        while (Date.now() < deadline) {
          text = (await metrics.expose()).body;
          if (
            /avatar_viewer_first_frame_seconds_count\{decoder="webcodecs"\} 1\n/
              .test(text)
          ) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        assert.match(
          text,
          /avatar_viewer_first_frame_seconds_count\{decoder="webcodecs"\} 1\n/,
          text.split("\n").filter((l) =>
            l.startsWith("avatar_viewer_") && !l.includes("_bucket")
          ).join("\n") || "no avatar_viewer_ series",
        );
        // And its share of glass to glass: how long arrived audio waits to be heard,
        // plus the output's latency (the next report, at most 5 s on).
        const wait = (await stats(page)).webcodecs.arrivalWaitMs;
        assert.ok(wait !== null && wait >= 0 && wait < 1000, `wait ${wait} ms`);
        const glass =
          /avatar_viewer_glass_to_glass_seconds_sum\{decoder="webcodecs"\} ([\d.e-]+)\navatar_viewer_glass_to_glass_seconds_count\{decoder="webcodecs"\} (\d+)/;
        // (Every decoder's series is there from the start, at 0.) The reports made
        // after that wait was read: the first one follows the first frame, and under
        // load its wait can still be the stream's start (1.03 s once in CI).
        const read = () => {
          const [, sum, count] = text.match(glass) ?? [];
          return { sum: Number(sum ?? 0), count: Number(count ?? 0) };
        };
        text = (await metrics.expose()).body;
        const before = read();
        const until = Date.now() + 10_000;
        while (Date.now() < until && read().count <= before.count) {
          await new Promise((r) => setTimeout(r, 250));
          text = (await metrics.expose()).body;
        }
        const after = read();
        const reports = after.count - before.count;
        assert.ok(reports >= 1, `glass to glass reports since: ${reports}`);
        const mean = (after.sum - before.sum) / reports;
        assert.ok(mean > 0 && mean < 1, `glass to glass ${mean} s`);
      },
    );

    await t.step(
      "the picture leads the sound by less than a frame, on the shortest audio output",
      async () => {
        // The output's latency is the smallest this browser's device offers.
        const least = await page.evaluate(async () => {
          const ctx = new AudioContext({ latencyHint: 0 });
          await ctx.resume();
          await new Promise((r) => setTimeout(r, 200));
          const ms = (ctx.baseLatency + (ctx.outputLatency || 0)) * 1000;
          await ctx.close();
          return Math.round(ms);
        });
        const { outputLatencyMs } = (await stats(page)).webcodecs;
        assert.ok(
          outputLatencyMs <= least + 1,
          `output latency ${outputLatencyMs} ms, the device's least ${least} ms`,
        );
        // Each frame is drawn one frame (40 ms at 25 fps) before the heard clock reaches
        // it: sampled on every display frame, the clock minus the shown frame's
        // timestamp runs from -40 to 0 and centres on half a frame ahead, not on 0
        // (half a frame early, as before) nor behind the sound.
        const offsets = await page.evaluate(() =>
          new Promise<number[]>((resolve) => {
            const p = (globalThis as unknown as Win).avatarPlayer;
            const out: number[] = [];
            const tick = () => {
              const w = p.stats.webcodecs;
              if (w.shownMs !== null && w.clockMs !== null) {
                out.push(w.clockMs - w.shownMs);
              }
              if (out.length >= 120) resolve(out);
              else requestAnimationFrame(tick);
            };
            requestAnimationFrame(tick);
          })
        );
        offsets.sort((a, b) => a - b);
        const median = offsets[offsets.length >> 1];
        assert.ok(
          median >= -35 && median <= -5,
          `A/V offset median ${median} ms (${offsets.join(",")})`,
        );
      },
    );

    await t.step(
      "the service's captions fire when the audio clock reaches them",
      async () => {
        // Chromium's fake microphone beeps and the example engine takes the beeps
        // for speech: a beep over the typed turn's reply cuts it (barge-in), and its
        // caption rightly goes out unheard. Muted, and quiet for a second, first.
        await page.evaluate(() => {
          const w = globalThis as unknown as Win & { quietSince: number };
          w.avatarPlayer.mute();
          w.quietSince = Date.now();
          w.avatarPlayer.on("speaking", () => w.quietSince = Date.now());
        });
        await page.waitForFunction(
          () => {
            const w = globalThis as unknown as Win & { quietSince: number };
            return !w.avatarPlayer.speaking &&
              Date.now() - w.quietSince >= 1000;
          },
          undefined,
          WAIT,
        );
        await page.evaluate((reply) => {
          const w = globalThis as unknown as Win & { heard: unknown[] };
          w.heard = [];
          w.avatarPlayer.on("caption", (d) => {
            if (d.role === "avatar" && d.text !== reply) return;
            w.heard.push({
              ...d,
              clock: w.avatarPlayer.stats.webcodecs.clockMs,
              at: performance.now(),
            });
          });
          // When the page's own script could first see the audio clock at each time:
          // a caption is late only against that (a starved page runs no script).
          const looks: Array<{ at: number; clock: number }> = [];
          (w as unknown as { looks: typeof looks }).looks = looks;
          setInterval(() => {
            looks.push({
              at: performance.now(),
              clock: w.avatarPlayer.stats.webcodecs.clockMs ?? -1,
            });
            if (looks.length > 6000) looks.shift();
          }, 10);
          w.avatarPlayer.sendText("hello avatar");
        }, replyFor("hello avatar"));
        const heard = await page.waitForFunction(
          () => {
            const w = globalThis as unknown as {
              heard: Array<
                {
                  role: string;
                  text: string;
                  media_time_ms: number | null;
                  clock: number;
                  at: number;
                }
              >;
            };
            const a = w.heard.filter((c) =>
              c.role === "avatar" && c.media_time_ms !== null
            );
            return a.length > 0 ? a : null;
          },
          undefined,
          WAIT,
        ).then((h) => h.jsonValue()).catch(async (err) => {
          // What the page heard and its player's state, for a failure's report.
          const page_ = await page.evaluate(() => {
            const w = globalThis as unknown as Win & { heard: unknown[] };
            const { state, stats } = w.avatarPlayer;
            return JSON.stringify({ heard: w.heard, state, stats });
          });
          throw new Error(`no timed avatar caption: ${page_}`, { cause: err });
        });
        const looks = await page.evaluate(() =>
          (globalThis as unknown as {
            looks: Array<{ at: number; clock: number }>;
          }).looks
        );
        for (const c of heard!) {
          // Not before its audio is heard (a clock report's slack), nor later than a
          // wake (≤ 50 ms) after the page's own timer could see the clock there.
          const seen = looks.find((l) => l.clock >= c.media_time_ms!);
          const late = seen ? c.at - seen.at : 0;
          assert.ok(
            c.clock >= c.media_time_ms! - 100 && late <= 100,
            `"${c.text}" at ${c.media_time_ms} ms fired at ${c.clock} ms, ` +
              `${late} ms after the page saw the clock there`,
          );
        }
      },
    );

    await t.step("a takeover's stream plays from the live edge", async () => {
      // Resuming a running context is a state change for nothing (WebKitGTK's page
      // deadlocked in one while a worklet posted): a takeover asks for none.
      await page.evaluate(() => {
        const g = globalThis as unknown as { __resumedRunning: number };
        g.__resumedRunning = 0;
        const resume = AudioContext.prototype.resume;
        AudioContext.prototype.resume = function () {
          if (this.state === "running") g.__resumedRunning++;
          return resume.call(this);
        };
      });
      await page.evaluate(() =>
        (globalThis as unknown as Win).avatarPlayer._ws!.close()
      );
      await page.waitForFunction(
        () => (globalThis as unknown as Win).avatarPlayer.stats.streams === 2,
        undefined,
        WAIT,
      );
      await waitDrawing(page, 25, 1000);
      assert.equal(
        await page.evaluate(() =>
          (globalThis as unknown as { __resumedRunning: number })
            .__resumedRunning
        ),
        0,
        "running audio contexts resumed again",
      );
      const s = await stats(page);
      assert.equal(s.decoder, "webcodecs");
      // The burst (the GOP so far, up to 1 s) is not played late: what is decoded but
      // not heard stays within the jitter target and the jump slack.
      assert.ok(
        s.webcodecs.latencyMs <= s.webcodecs.jitterTargetMs + 200,
        `latency ${s.webcodecs.latencyMs} ms (target ${s.webcodecs.jitterTargetMs})`,
      );
    });

    await t.step(
      "a transparent avatar shows the page around it (WebCodecs)",
      async () => {
        await endOnPage(page);
        await startOnPage(page, pageBase, "bg=transparent");
        await waitDrawing(page, 10, 300);
        await checkTransparent(page, "transparent-webcodecs");
      },
    );

    await t.step(
      "a transparent avatar shows the page around it (MSE)",
      async () => {
        await endOnPage(page);
        await startOnPage(page, pageBase, "bg=transparent&decoder=video");
        await page.waitForFunction(
          () => document.querySelector("video")!.currentTime > 0.5,
          undefined,
          WAIT,
        );
        assert.equal((await stats(page)).decoder, "mse");
        await checkTransparent(page, "transparent-mse");
      },
    );

    await t.step(
      "without WebGL a transparent avatar is composited on the CPU",
      async () => {
        await stack.browser.context.addInitScript(() => {
          const get = HTMLCanvasElement.prototype.getContext;
          HTMLCanvasElement.prototype.getContext = function (
            this: HTMLCanvasElement,
            type: string,
            ...rest: unknown[]
          ) {
            if (type === "webgl" || type === "webgl2") return null;
            return (get as (...a: unknown[]) => unknown).call(
              this,
              type,
              ...rest,
            );
          } as typeof HTMLCanvasElement.prototype.getContext;
        });
        await endOnPage(page);
        await startOnPage(page, pageBase, "bg=transparent");
        await waitDrawing(page, 10, 300);
        await checkTransparent(page, "transparent-cpu");
      },
    );

    await t.step("without VideoDecoder the page plays over MSE", async () => {
      await stack.browser.context.addInitScript(() => {
        delete (globalThis as Record<string, unknown>).VideoDecoder;
      });
      await endOnPage(page);
      await startOnPage(page, pageBase, "bg=studio");
      await page.waitForFunction(
        () => {
          const v = document.querySelector("video")!;
          return !v.paused && v.currentTime > 1 && !v.hidden;
        },
        undefined,
        WAIT,
      );
      const s = await stats(page);
      assert.equal(s.decoder, "mse");
      assert.equal(await page.locator("canvas.avatar-canvas").count(), 0);
    });
    assert.deepEqual(problems, []);
  } finally {
    await stack.close();
  }
});
