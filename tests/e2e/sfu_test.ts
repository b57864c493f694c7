/**
 * The realtime transport end to end (DECISIONS 11): a real Janus started by the test
 * (the code of `deno task sfu`), the real service on loopback with SFU_URL pointing at
 * it, the example engine on wss, the example backend and page, and headless Chromium
 * playing the avatar over WebRTC. Screenshot: test-output/screenshots/sfu.png.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { replyFor } from "../../scripts/example_engine.ts";
import { createJanusSfu } from "../../lib/sfu/janus.ts";
import { readMountpointRecord } from "../../lib/sfu/mountpoints.ts";
import { liveEncoderPids } from "../../lib/render/encoder.ts";
import type { AvatarPlayer } from "../../client/browser.ts";
import { startOnPage, startPlayerStack } from "./_player.ts";
import { hangupAllWebrtc, startTestJanus } from "../lib/sfu/_janus.ts";
import { requireChromium, SHOTS, WAIT } from "./_browser.ts";

/** The example page exposes its player as `globalThis.avatarPlayer`. */
type Win = { avatarPlayer: AvatarPlayer };

/**
 * How far a speaking event may sit from the audible onset it announces (ms): the
 * onset is read from the receiver's `totalAudioEnergy`, which Chromium's `getStats()`
 * refreshes about every 50 ms (its stats cache), and the event fires at the sender's
 * write time plus the jitter buffer's delay; the path before the jitter buffer
 * (ffmpeg's Opus encoding beside H.264, Janus, loopback) is not in that estimate. On
 * the shared 2-core test machine the event fired 30–170 ms before the measured onset.
 */
const ONSET_TOLERANCE_MS = 250;

/** What the page records of one avatar turn's speech (epoch ms, the page's clock). */
interface SpeechSeen {
  /** `avatar.speaking` true arrived on the socket. */
  arrived: number;
  /** The player's `speaking` true event fired. */
  fired: number;
  media_time_ms: number;
  playout_delay_ms: number;
  /** The first audible rise of the received audio after the arrival. */
  onset: number;
}

/** The page's record of avatar speech, by turn (the fake microphone makes turns too). */
interface SpeechLog {
  arrived: Record<string, number>;
  fired: Record<
    string,
    { at: number; media_time_ms: number; playout_delay_ms: number }
  >;
  /** The turn whose avatar transcript is `reply`. */
  replyTurn: string | null;
  /** When the received audio rose audibly (newest last, bounded). */
  rises: number[];
  /** The latest `speaking` event's value. */
  speaking: boolean;
}

/**
 * Records, in the page, per turn when `avatar.speaking` true arrives and when the player
 * fires it, which turn the avatar transcript `reply` belongs to, and when audio becomes
 * audible at the receiver: the inbound-rtp audio's `totalAudioEnergy` polled every
 * 10 ms rising by at least −40 dBFS worth (the server's audible level) since the
 * previous poll. Turns are told apart: Chromium's fake microphone beeps, and the example
 * engine echoes what it hears as turns of its own.
 */
function watchSpeech(page: Page, reply: string): Promise<void> {
  return page.evaluate((reply) => {
    const w = globalThis as unknown as Win & {
      speech: SpeechLog;
      pcs: RTCPeerConnection[];
    };
    const log: SpeechLog = {
      arrived: {},
      fired: {},
      replyTurn: null,
      rises: [],
      speaking: false,
    };
    w.speech = log;
    const p = w.avatarPlayer;
    p._ws!.addEventListener("message", (e) => {
      if (typeof e.data !== "string") return;
      const m = JSON.parse(e.data);
      if (m.type === "avatar.speaking" && m.speaking) {
        log.arrived[m.turn_id] ??= Date.now();
      }
      if (m.type === "transcript" && m.role === "avatar" && m.text === reply) {
        log.replyTurn = m.turn_id;
      }
    });
    p.on("speaking", (d) => {
      log.speaking = d.speaking;
      if (!d.speaking || log.fired[d.turn_id]) return;
      log.fired[d.turn_id] = {
        at: Date.now(),
        media_time_ms: d.media_time_ms,
        playout_delay_ms: p.stats.rtc.playoutDelayMs,
      };
    });
    const pc = w.pcs.at(-1)!;
    let last: { at: number; energy: number } | null = null;
    const poll = async () => {
      if (w.speech !== log) return;
      let energy = 0;
      (await pc.getStats()).forEach((r) => {
        if (r.type === "inbound-rtp" && r.kind === "audio") {
          energy += r.totalAudioEnergy ?? 0;
        }
      });
      const at = Date.now();
      if (last && energy > last.energy) {
        const level = Math.sqrt(
          (energy - last.energy) / ((at - last.at) / 1000),
        );
        if (level >= 0.01) {
          log.rises.push(at);
          if (log.rises.length > 1000) log.rises.shift();
        }
      }
      if (!last || energy !== last.energy) last = { at, energy };
      setTimeout(poll, 10);
    };
    void poll();
  }, reply);
}

interface Rtc {
  reconnects: number;
  frames: number;
  audio: number;
  pcs: number;
  width: number;
  state: string;
}

function rtc(page: Page): Promise<Rtc> {
  return page.evaluate(() => {
    const p = (globalThis as unknown as Win).avatarPlayer;
    return {
      reconnects: p?.stats.reconnects ?? 0,
      frames: p?.stats.rtc.framesDecoded ?? 0,
      audio: p?.stats.rtc.audioPacketsReceived ?? 0,
      pcs: p?.stats.rtc.peerConnections ?? 0,
      width: document.querySelector("video")!.videoWidth,
      state: p?.state ?? "none",
    };
  });
}

/** Waits until the current PeerConnection decoded `frames` more frames and got audio. */
async function waitPlaying(page: Page, frames: number): Promise<void> {
  const from = await rtc(page);
  await page.waitForFunction(
    ([f, a]) => {
      const p = (globalThis as unknown as Win).avatarPlayer;
      const v = document.querySelector("video")!;
      return !v.paused && v.videoWidth > 0 &&
        p.stats.rtc.framesDecoded > f && p.stats.rtc.audioPacketsReceived > a;
    },
    [from.frames + frames, from.audio],
    WAIT,
  );
}

Deno.test("webrtc_sfu: Chromium plays the avatar through Janus, talks, survives a takeover; end destroys the mountpoint", async (t) => {
  await requireChromium();
  const janus = await startTestJanus();
  const sfu = createJanusSfu({
    url: janus.url,
    token: janus.apiSecret,
    adminKey: janus.apiKey,
  });
  const stack = await startPlayerStack({
    prefix: "sfu-e2e-",
    viewport: { width: 900, height: 900 },
    env: janus.env,
    transport: "webrtc_sfu",
  });
  const { client, pageBase, browser } = stack;
  const { page, problems } = browser;
  // Every PeerConnection the page makes, for the test's own getStats() polling.
  await page.addInitScript(() => {
    const w = globalThis as unknown as { pcs: RTCPeerConnection[] };
    w.pcs = [];
    const Native = RTCPeerConnection;
    globalThis.RTCPeerConnection = class extends Native {
      constructor(config?: RTCConfiguration) {
        super(config);
        w.pcs.push(this);
      }
    };
  });
  let sessionId = "";
  try {
    await t.step(
      "a webrtc_sfu session plays over WebRTC and turns active",
      async () => {
        sessionId = (await startOnPage(page, pageBase)).id;
        const s = await client.getSession(sessionId);
        assert.equal(s.transport, "webrtc_sfu");
        await waitPlaying(page, 25);
        const now = await rtc(page);
        assert.ok(now.width > 0);
        assert.equal(now.pcs, 1);
        await waitPlaying(page, 10);
        assert.equal((await client.getSession(sessionId)).status, "active");
        assert.deepEqual((await sfu.listMountpoints()).map((m) => m.label), [
          sessionId,
        ]);
        const rec = await readMountpointRecord(
          stack.service.app.deps,
          sessionId,
        );
        assert.equal(rec?.viewer, "flowing");
      },
    );

    await t.step(
      "the page's traffic never carries a Janus credential",
      async () => {
        const html = await page.content();
        for (const secret of [janus.apiSecret, janus.apiKey, janus.url]) {
          assert.ok(!html.includes(secret));
        }
      },
    );

    await t.step(
      "a typed turn comes back as an avatar transcript; speaking fires when its audio plays",
      async () => {
        await page.getByRole("button", { name: "Mute", exact: true }).click();
        const reply = replyFor("hello avatar");
        await watchSpeech(page, reply);
        // Quiet first: no turn of the microphone's (echoed before the mute) speaking,
        // none audible, for a second.
        await page.waitForFunction(
          () => {
            const { speech } = globalThis as unknown as { speech: SpeechLog };
            const since = Math.max(
              0,
              speech.rises.at(-1) ?? 0,
              ...Object.values(speech.fired).map((f) => f.at),
            );
            return !speech.speaking && Date.now() - since >= 1000;
          },
          undefined,
          WAIT,
        );
        await page.getByLabel("Message").fill("hello avatar");
        await page.getByRole("button", { name: "Send", exact: true }).click();
        await page.locator('#log li[data-role="avatar"]', {
          hasText: reply,
        }).waitFor(WAIT);
        const seen = await page.waitForFunction(
          () => {
            const { speech } = globalThis as unknown as { speech: SpeechLog };
            const turn = speech.replyTurn;
            if (turn === null) return null;
            const arrived = speech.arrived[turn];
            const fired = speech.fired[turn];
            const onset = speech.rises.find((at) => at >= arrived);
            if (arrived === undefined || !fired || onset === undefined) {
              return null;
            }
            return {
              arrived,
              fired: fired.at,
              media_time_ms: fired.media_time_ms,
              playout_delay_ms: fired.playout_delay_ms,
              onset,
            };
          },
          undefined,
          WAIT,
        ).then((h) => h.jsonValue() as Promise<SpeechSeen>);
        const { arrived, fired, onset } = seen;
        const what = JSON.stringify(seen);
        // The message comes first; the event waits for the audio, not the message.
        assert.ok(arrived <= fired, what);
        // Its time is the write of the frame carrying it plus its offset in that
        // frame (up to one 40-ms frame); the message goes out right after the write.
        assert.ok(seen.media_time_ms <= arrived + 40, what);
        // Never before the sender's time, and when it is heard (the player measures the
        // lag from this speech's onset: client/rtc_clock.ts).
        assert.ok(fired >= seen.media_time_ms, what);
        assert.ok(
          Math.abs(fired - onset) <= ONSET_TOLERANCE_MS,
          `speaking fired ${fired - onset} ms from the audible onset: ${what}`,
        );
      },
    );

    await t.step(
      "a dropped socket takes over and renegotiates; playback goes on",
      async () => {
        const before = await rtc(page);
        await page.evaluate(() =>
          (globalThis as unknown as Win).avatarPlayer._ws!.close()
        );
        await page.waitForFunction(
          (n) => {
            const p = (globalThis as unknown as Win).avatarPlayer;
            return p.state === "open" && p.stats.rtc.peerConnections > n;
          },
          before.pcs,
          WAIT,
        );
        await waitPlaying(page, 25);
        assert.equal((await client.getSession(sessionId)).status, "active");
        await page.screenshot({ path: new URL("sfu.png", SHOTS).pathname });
      },
    );

    await t.step(
      "the SFU drops the viewer: the service offers a new one, playback resumes",
      async () => {
        const before = await rtc(page);
        assert.equal(await hangupAllWebrtc(janus), 1);
        await page.waitForFunction(
          (n) =>
            (globalThis as unknown as Win).avatarPlayer.stats.rtc
              .peerConnections > n,
          before.pcs,
          WAIT,
        );
        await waitPlaying(page, 25);
        assert.equal((await client.getSession(sessionId)).status, "active");
        // Renegotiated on the same socket (the client's own fall back, a new
        // socket once the PeerConnection fails, was not needed).
        const reconnects = await page.evaluate(() =>
          (globalThis as unknown as Win).avatarPlayer.stats.reconnects
        );
        assert.equal(reconnects, before.reconnects);
      },
    );

    await t.step(
      "the RTP encoder killed: restarted toward the same mountpoint, the same PeerConnection plays on",
      async () => {
        const [pid, ...others] = liveEncoderPids();
        assert.deepEqual(others, [], "the session's RTP encoder only");
        const before = await rtc(page);
        Deno.kill(pid, "SIGKILL");
        for (let i = 0; i < 200; i++) {
          const now = liveEncoderPids();
          if (now.length === 1 && now[0] !== pid) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.equal(liveEncoderPids().length, 1);
        assert.notEqual(liveEncoderPids()[0], pid);
        // Frames decoded from here on came from the new encoder through Janus.
        await waitPlaying(page, 25);
        const now = await rtc(page);
        assert.equal(now.pcs, before.pcs, "no new PeerConnection");
        assert.equal(now.reconnects, before.reconnects);
        assert.equal((await client.getSession(sessionId)).status, "active");
      },
    );

    await t.step(
      "End ends the session and destroys its mountpoint",
      async () => {
        await page.getByRole("button", { name: "End", exact: true }).click();
        await page.waitForFunction(
          () => (globalThis as unknown as Win).avatarPlayer.state === "ended",
          undefined,
          WAIT,
        );
        for (let i = 0; i < 100; i++) {
          if ((await sfu.listMountpoints()).length === 0) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.deepEqual(await sfu.listMountpoints(), []);
        assert.deepEqual(problems, []);
      },
    );
  } finally {
    await stack.close();
    await janus.stop();
  }
});
