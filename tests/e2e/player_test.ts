/**
 * The browser client in a real headless Chromium, end to end: the real service on a
 * loopback socket, the example engine on wss, the example customer backend (using the
 * backend client over real HTTP) serving the example page and the bundled browser client.
 * Asserts that the avatar video really plays, that a typed turn comes back as an avatar
 * transcript, that the microphone is sent, and that a dropped socket reconnects (token
 * refresh + takeover) and playback resumes. Screenshot: test-output/screenshots/player.png.
 * Token and socket faults on their own: player_tokens_test.ts.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type {
  AvatarPlayer,
  SpeakingDetail,
  TurnDetail,
} from "../../client/browser.ts";
import { replyFor } from "../../scripts/example_engine.ts";
import { SHOTS, WAIT } from "./_browser.ts";
import { startOnPage, startPlayerStack, waitPlaying } from "./_player.ts";

/** A speaking event as the page saw it fire. */
interface Heard extends SpeakingDetail {
  video_ms: number;
  indicator: string;
  /** When it fired (`performance.now()`). */
  at: number;
}

/** The video's time as a 10-ms timer of the page saw it (`performance.now()`, ms). */
interface Look {
  at: number;
  video_ms: number;
}

/** The example page exposes its player as `globalThis.avatarPlayer`. */
type Win = { avatarPlayer: AvatarPlayer };

interface Playback {
  time: number;
  frames: number;
  state: string;
  reconnects: number;
  streams: number;
  micFrames: number;
}

function playback(page: Page): Promise<Playback> {
  return page.evaluate(() => {
    const v = document.querySelector("video")!;
    const p = (globalThis as unknown as Win).avatarPlayer;
    return {
      time: v.currentTime,
      frames: v.getVideoPlaybackQuality().totalVideoFrames,
      state: p?.state ?? "none",
      reconnects: p?.stats.reconnects ?? 0,
      streams: p?.stats.streams ?? 0,
      micFrames: p?.stats.micFramesSent ?? 0,
    };
  });
}

Deno.test("browser client plays the avatar, talks, and survives a dropped socket", async (t) => {
  let tokenRefreshes = 0;
  const stack = await startPlayerStack({
    prefix: "player-e2e-",
    viewport: { width: 900, height: 900 },
    onBackendRequest: (req) => {
      if (new URL(req.url).pathname.endsWith("/token")) tokenRefreshes++;
    },
  });
  const { page, client, pageBase } = stack;
  const { problems } = stack.browser;

  let sessionId = "";
  try {
    await t.step("the page starts a session and the video plays", async () => {
      sessionId = (await startOnPage(page, pageBase)).id;
      assert.match(sessionId, /^session:/);
      const start = await playback(page);
      await waitPlaying(page, start, 1.5, 20);
      assert.equal((await client.getSession(sessionId)).status, "active");
    });

    await t.step("the microphone is sent, and not while muted", async () => {
      const frames = () =>
        page.evaluate(() =>
          (globalThis as unknown as Win).avatarPlayer.stats.micFramesSent
        );
      const framesAbove = (n: number) =>
        page.waitForFunction(
          (n) =>
            (globalThis as unknown as Win).avatarPlayer.stats.micFramesSent > n,
          n,
          WAIT,
        );
      await framesAbove(25);
      await page.getByRole("button", { name: "Mute", exact: true }).click();
      const muted = await frames();
      // Half a second of capture (25 frames when live) sends nothing.
      await page.evaluate(() => new Promise((ok) => setTimeout(ok, 500)));
      assert.equal(await frames(), muted);
      await page.getByRole("button", { name: "Unmute", exact: true }).click();
      await framesAbove(muted + 10);
      // Muted again so that only the typed turn below makes the avatar talk.
      await page.getByRole("button", { name: "Mute", exact: true }).click();
    });

    await t.step(
      "a typed turn comes back as an avatar turn and transcript",
      async () => {
        await page.evaluate(() => {
          const w = globalThis as unknown as Win & {
            turns: TurnDetail[];
            speech: Heard[];
            looks: Look[];
          };
          w.turns = [];
          w.avatarPlayer.on("turn", (d) => w.turns.push(d));
          // When each speaking event fires: the video's time and the page's indicator.
          w.speech = [];
          w.avatarPlayer.on("speaking", (d) =>
            w.speech.push({
              ...d,
              video_ms: document.querySelector("video")!.currentTime * 1000,
              indicator:
                document.getElementById("speaking")!.dataset.speaking ?? "",
              at: performance.now(),
            }));
          // When the page's own script could first see the video at each time: an
          // event is late only against that (a starved page runs no script at all).
          w.looks = [];
          setInterval(() => {
            w.looks.push({
              at: performance.now(),
              video_ms: document.querySelector("video")!.currentTime * 1000,
            });
            if (w.looks.length > 6000) w.looks.shift();
          }, 10);
        });
        await page.getByLabel("Message").fill("hello avatar");
        await page.getByRole("button", { name: "Send", exact: true }).click();
        const user = page.locator('#log li[data-role="user"]', {
          hasText: "hello avatar",
        });
        await user.waitFor(WAIT);
        const avatar = page.locator('#log li[data-role="avatar"]', {
          hasText: replyFor("hello avatar"),
        });
        await avatar.waitFor(WAIT);
        const turns = await page.waitForFunction(
          () => {
            const w = globalThis as unknown as { turns: TurnDetail[] };
            const start = w.turns.find((t) =>
              t.phase === "start" && t.role === "avatar"
            );
            const end = start &&
              w.turns.find((t) =>
                t.phase === "end" && t.turn_id === start.turn_id
              );
            return end ? [start, end] : null;
          },
          undefined,
          WAIT,
        ).then((h) => h.jsonValue());
        assert.ok(turns);
        assert.equal(turns[1].role, "avatar");
      },
    );

    await t.step(
      "speaking events fire when the video reaches the speech; the page shows them",
      async () => {
        const heard = await page.waitForFunction(
          () => {
            const w = globalThis as unknown as { speech: Heard[] };
            const on = w.speech.find((d) => d.speaking);
            const off = on &&
              w.speech.find((d) => !d.speaking && d.turn_id === on.turn_id);
            return off ? [on, off] : null;
          },
          undefined,
          WAIT,
        ).then((h) => h.jsonValue() as Promise<Heard[]>);
        const looks = await page.evaluate(() =>
          (globalThis as unknown as { looks: Look[] }).looks
        );
        for (const d of heard) {
          // Never before the video shows that moment, nor later than a wake (≤ 50 ms)
          // after the page's own timer could see the video there.
          assert.ok(d.video_ms >= d.media_time_ms, JSON.stringify(d));
          const seen = looks.find((l) => l.video_ms >= d.media_time_ms);
          const late = seen ? d.at - seen.at : 0;
          assert.ok(late <= 100, JSON.stringify({ ...d, seen, late }));
          assert.equal(d.indicator, String(d.speaking));
        }
        assert.ok(heard[1].media_time_ms > heard[0].media_time_ms);
      },
    );

    await t.step(
      "Interrupt cuts a long answer: the player reports what was played",
      async () => {
        const before = await page.evaluate(() =>
          (globalThis as unknown as { speech: Heard[] }).speech.length
        );
        await page.getByLabel("Message").fill(
          "tell me a very long story about the sea ".repeat(4),
        );
        await page.getByRole("button", { name: "Send", exact: true }).click();
        await page.waitForFunction(
          (n) =>
            (globalThis as unknown as { speech: Heard[] }).speech.slice(n)
              .some((d) => d.speaking),
          before,
          WAIT,
        );
        // Its caption shows as it is said...
        await page.waitForFunction(
          () =>
            document.getElementById("caption")!.textContent!.includes(
              "a very long story",
            ),
          undefined,
          WAIT,
        );
        await page.evaluate(() => {
          const w = globalThis as unknown as Win & { cuts: unknown[] };
          w.cuts = [];
          w.avatarPlayer.on("interrupted", (d) => w.cuts.push(d));
        });
        await page.getByRole("button", { name: "Interrupt", exact: true })
          .click();
        const cut = await page.waitForFunction(
          () => (globalThis as unknown as { cuts: unknown[] }).cuts[0],
          undefined,
          WAIT,
        ).then((h) => h.jsonValue()) as { played_ms: number };
        assert.ok(cut.played_ms > 0, JSON.stringify(cut));
        await page.locator("#log li", {
          hasText: `Avatar interrupted after ${cut.played_ms} ms`,
        }).waitFor(WAIT);
        // ...the speaking indicator goes off with the cut, and the caption of words
        // never said with it.
        await page.waitForFunction(
          () =>
            document.getElementById("speaking")!.dataset.speaking === "false",
          undefined,
          WAIT,
        );
        assert.equal(
          await page.evaluate(() =>
            document.getElementById("caption")!.textContent
          ),
          "",
        );
      },
    );

    await t.step(
      "a dropped socket reconnects and playback resumes",
      async () => {
        const before = await playback(page);
        const refreshesBefore = tokenRefreshes;
        await page.evaluate(() => {
          // Record the text frames every socket sends from now on.
          const w = globalThis as unknown as Win & { sent: string[] };
          w.sent = [];
          const send = WebSocket.prototype.send;
          WebSocket.prototype.send = function (data) {
            if (typeof data === "string") w.sent.push(data);
            return send.call(this, data);
          };
          w.avatarPlayer._ws!.close();
        });
        await page.waitForFunction(
          ([r, s]) => {
            const p = (globalThis as unknown as Win).avatarPlayer;
            return p.state === "open" && p.stats.reconnects > r &&
              p.stats.streams > s;
          },
          [before.reconnects, before.streams],
          WAIT,
        );
        // A fresh stream (new socket, new init segment, timestamps from 0) plays on.
        const after = await playback(page);
        assert.equal(after.reconnects, before.reconnects + 1);
        assert.equal(after.streams, before.streams + 1);
        // The takeover used a fresh token from the backend.
        assert.equal(tokenRefreshes, refreshesBefore + 1);
        await waitPlaying(page, after, 1.5, 20);
        assert.equal((await client.getSession(sessionId)).status, "active");
        // The new socket was told the microphone's rate before any audio.
        const sent = () =>
          page.evaluate(() =>
            (globalThis as unknown as { sent: string[] }).sent.map((x) =>
              JSON.parse(x)
            )
          );
        assert.deepEqual((await sent())[0], {
          type: "audio.config",
          sample_rate: 24000,
        });
        await page.getByRole("button", { name: "Interrupt", exact: true })
          .click();
        assert.ok(
          (await sent()).some((m) => m.type === "interrupt"),
          "interrupt sent",
        );
        // A long caption stays a subtitle: two lines at most, its newest words shown,
        // over the avatar's lower edge (not its face).
        const caption = await page.evaluate(() => {
          const c = document.getElementById("caption")!;
          c.textContent = `You typed: ${
            "tell me a very long story about the sea ".repeat(4)
          }the end.`;
          const r = c.getBoundingClientRect();
          const v = document.querySelector("video")!.getBoundingClientRect();
          const last = document.createRange();
          last.setStart(c.firstChild!, c.textContent.length - 4);
          last.setEnd(c.firstChild!, c.textContent.length);
          const end = last.getBoundingClientRect();
          return {
            height: r.height,
            line: parseFloat(getComputedStyle(c).lineHeight),
            top: r.top,
            videoMid: (v.top + v.bottom) / 2,
            endShown: end.top >= r.top && end.bottom <= r.bottom + 1,
          };
        });
        assert.ok(
          caption.height <= 2 * caption.line + 6,
          JSON.stringify(caption),
        );
        assert.ok(caption.top > caption.videoMid, JSON.stringify(caption));
        assert.ok(caption.endShown, JSON.stringify(caption));
        await page.screenshot({ path: new URL("player.png", SHOTS).pathname });
      },
    );

    await t.step(
      "playback that falls behind jumps to the live edge",
      async () => {
        const jumps = await page.evaluate(() => {
          const p = (globalThis as unknown as Win).avatarPlayer;
          document.querySelector("video")!.playbackRate = 0.25;
          return p.stats.liveEdgeJumps;
        });
        await page.waitForFunction(
          (n) =>
            (globalThis as unknown as Win).avatarPlayer.stats.liveEdgeJumps > n,
          jumps,
          WAIT,
        );
        await page.evaluate(() =>
          document.querySelector("video")!.playbackRate = 1
        );
        await waitPlaying(page, await playback(page), 1, 10);
      },
    );

    await t.step(
      "a hole in the stream is skipped and playback goes on",
      async () => {
        // Lose 15 media segments (600 ms) on the way in, as a congested link would.
        const skipsBefore = await page.evaluate(() => {
          const p = (globalThis as unknown as Win).avatarPlayer;
          const ws = p._ws!;
          const deliver = ws.onmessage!;
          let seen = 0;
          ws.onmessage = function (e: MessageEvent) {
            if (typeof e.data !== "string" && ++seen > 5 && seen <= 20) return;
            deliver.call(this, e);
          };
          return p.stats.gapSkips;
        });
        await page.waitForFunction(
          (n) => (globalThis as unknown as Win).avatarPlayer.stats.gapSkips > n,
          skipsBefore,
          WAIT,
        );
        await waitPlaying(page, await playback(page), 1.5, 20);
        // Media far behind the playhead is trimmed (the hole's first range too).
        await page.waitForFunction(
          () => {
            const v = document.querySelector("video")!;
            return v.currentTime > 6 && v.buffered.length === 1 &&
              v.buffered.start(0) > v.currentTime - 5;
          },
          undefined,
          WAIT,
        );
      },
    );

    await t.step("End ends the session and the player reports it", async () => {
      await page.getByRole("button", { name: "End", exact: true }).click();
      await page.waitForFunction(
        () => (globalThis as unknown as Win).avatarPlayer.state === "ended",
        undefined,
        WAIT,
      );
      const status = (await client.getSession(sessionId)).status;
      assert.ok(status === "ended" || status === "ended_with_warnings", status);
      // The page shows how and why it ended.
      assert.equal(await page.locator("#end-status").textContent(), status);
      assert.equal(
        await page.locator("#end-reason").textContent(),
        "requested",
      );
    });

    assert.deepEqual(problems, []);
  } finally {
    await stack.close();
  }
});
