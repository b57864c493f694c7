/**
 * Browsers without what `webrtc_sfu` needs (DECISIONS 11): a real Janus, the real app
 * with SFU_URL pointing at it, the fake ECEP engine and browser sockets. A session
 * created `auto` serves a socket that says `webrtc.unsupported` (or answers with the
 * video rejected) as `websocket_fmp4` from the same renderer, and turns `active` on it;
 * a takeover switches back to WebRTC and to fMP4 again. A session created `webrtc_sfu`
 * never falls back: the socket gets the fatal `unsupported_media` at once.
 */
import assert from "node:assert/strict";
import {
  boxTypes,
  Browser,
  createSession,
  type LiveStack,
  statusOf,
  withLiveStack,
} from "../media/_live.ts";
import { startTestJanus } from "./_janus.ts";

/** An answer whose video section is rejected, as Firefox without OpenH264 sends it. */
const VIDEO_REJECTED = [
  "v=0",
  "o=- 1 1 IN IP4 0.0.0.0",
  "s=-",
  "t=0 0",
  "m=audio 9 UDP/TLS/RTP/SAVPF 111",
  "c=IN IP4 0.0.0.0",
  "a=rtpmap:111 opus/48000/2",
  "m=video 0 UDP/TLS/RTP/SAVPF 0",
  "c=IN IP4 0.0.0.0",
  "",
].join("\r\n");

/** Connects and waits for the SFU's offer. */
async function offered(s: LiveStack, id: string, token: string) {
  const b = Browser.connect(s, id, token);
  await b.opened;
  await b.message((m) => m.type === "webrtc.offer", "webrtc.offer");
  return b;
}

/** Waits for `media.init`, the init segment and `segments` media segments after it. */
async function playsFmp4(b: Browser, segments: number): Promise<void> {
  await b.message((m) => m.type === "media.init", "media.init");
  await b.until(() => b.binary.length > segments, "fMP4 segments");
  assert.deepEqual(boxTypes(b.binary[0]).slice(0, 2), ["ftyp", "moov"]);
  assert.ok(boxTypes(b.binary[1]).includes("moof"));
}

Deno.test("auto falls back to websocket_fmp4 per socket; webrtc_sfu gets the fatal unsupported_media", async (t) => {
  const janus = await startTestJanus();
  try {
    await withLiveStack(async (s) => {
      await t.step(
        "webrtc.unsupported: fMP4 on the socket, then active",
        async () => {
          const c = await createSession(s);
          assert.equal(
            (await statusOf(s, c.session_id)).transport,
            "webrtc_sfu",
          );
          const started = Date.now();
          const b = await offered(s, c.session_id, c.client_token);
          b.send({ type: "webrtc.unsupported" });
          await playsFmp4(b, 3);
          await b.message(
            (m) => m.type === "session.state" && m.status === "active",
            "active",
          );
          // Well before the 15-s start timeout: the fall back is not a failed start.
          assert.ok(Date.now() - started < 10_000);
          const status = await statusOf(s, c.session_id);
          assert.equal(status.status, "active");
          assert.equal(status.transport, "webrtc_sfu");
          // The microphone still goes up the socket.
          b.send(new Uint8Array(960));
          await s.engine.waiter.until(
            () => s.engine.peers[0]?.binary.length > 0,
            "microphone audio at the engine",
          );

          // Speech on the fMP4 timeline (presentation time), not the sender's clock.
          const from = b.json.length;
          b.send({ type: "text", text: "speak" });
          const speaking = (on: boolean) =>
            b.until(
              () =>
                b.json.slice(from).find((m) =>
                  m.type === "avatar.speaking" && m.speaking === on
                ),
              `avatar.speaking ${on}`,
            );
          const on = await speaking(true);
          const off = await speaking(false);
          const [t0, t1] = [on.media_time_ms, off.media_time_ms] as number[];
          assert.ok(t0 > 0 && t0 < 60_000, `media_time_ms ${t0}`);
          // The tone is 0.6 s long (one 40-ms frame of slack either way).
          assert.ok(Math.abs(t1 - t0 - 600) <= 40, `${t0} → ${t1}`);
          assert.equal(
            b.json.filter((m) => m.type === "avatar.speaking").length,
            2,
            "no second report of the speech on the sender's clock",
          );

          // A takeover mid-speech is offered WebRTC again, and hears nothing of the
          // speech on the fMP4 timeline; its cut is on the sender's clock.
          const from2 = b.json.length;
          b.send({ type: "text", text: "speak long" });
          await b.until(
            () =>
              b.json.slice(from2).find((m) =>
                m.type === "avatar.speaking" && m.speaking
              ),
            "avatar.speaking (long)",
          );
          const b2 = await offered(s, c.session_id, c.client_token);
          assert.equal(await b.closed(), 4000);
          assert.ok(!b2.json.some((m) => m.type === "media.init"));
          await new Promise((r) => setTimeout(r, 300));
          b2.send({ type: "interrupt" });
          await b2.message((m) => m.type === "turn.interrupted", "the cut");
          const said = b2.json.filter((m) => m.type === "avatar.speaking");
          assert.ok(
            said.every((m) => (m.media_time_ms as number) > 1e12),
            JSON.stringify(said),
          );

          // The next takeover falls back again.
          const b3 = await offered(s, c.session_id, c.client_token);
          assert.equal(await b2.closed(), 4000);
          b3.send({ type: "webrtc.unsupported" });
          await playsFmp4(b3, 2);
          b3.close();
        },
      );

      await t.step(
        "an answer that rejects the video is a fall back too",
        async () => {
          const c = await createSession(s, undefined, { transport: "auto" });
          const b = await offered(s, c.session_id, c.client_token);
          b.send({ type: "webrtc.answer", sdp: VIDEO_REJECTED });
          await playsFmp4(b, 2);
          await b.message(
            (m) => m.type === "session.state" && m.status === "active",
            "active",
          );
          assert.ok(
            !b.json.some((m) => m.type === "error"),
            JSON.stringify(b.json),
          );
          b.close();
        },
      );

      await t.step(
        "created webrtc_sfu: unsupported_media, fatal, at once",
        async () => {
          const c = await createSession(s, undefined, {
            transport: "webrtc_sfu",
          });
          for (
            const refusal of [
              { type: "webrtc.unsupported" },
              { type: "webrtc.answer", sdp: VIDEO_REJECTED },
            ]
          ) {
            const b = await offered(s, c.session_id, c.client_token);
            b.send(refusal);
            assert.deepEqual(
              await b.message((m) => m.type === "error", "error"),
              { type: "error", code: "unsupported_media", fatal: true },
            );
            assert.equal(await b.closed(), 4003);
            assert.equal(b.binary.length, 0);
          }
        },
      );

      await t.step(
        "websocket_fmp4: webrtc.unsupported is an invalid_message",
        async () => {
          const c = await createSession(s, undefined, {
            transport: "websocket_fmp4",
          });
          const b = Browser.connect(s, c.session_id, c.client_token);
          await b.opened;
          await b.message((m) => m.type === "media.init", "media.init");
          b.send({ type: "webrtc.unsupported" });
          assert.deepEqual(
            await b.message((m) => m.type === "error", "error"),
            { type: "error", code: "invalid_message", fatal: false },
          );
          b.close();
        },
      );
    }, { env: janus.env, noFfmpegLeft: true });
  } finally {
    await janus.stop();
  }
});
