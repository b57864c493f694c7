/**
 * Speech on a webrtc_sfu session (DECISIONS 6, 11): a real Janus, the real app with
 * SFU_URL pointing at it, the fake ECEP engine on wss and a browser socket. The RTP
 * output reports the audible speech: `avatar.speaking` true/false per turn with
 * `media_time_ms` on the sender's wall clock (epoch ms), and a cut tells the browser
 * and the engine how much was written to RTP (`played_ms`). The socket does not answer
 * the SFU's offer: the RTP goes to the mountpoint whatever the viewers do.
 */
import assert from "node:assert/strict";
import {
  Browser,
  createSession,
  type Json,
  type LiveStack,
  withLiveStack,
} from "../media/_live.ts";
import { startTestJanus } from "./_janus.ts";

/** One video frame at 25 fps (the audio written with it). */
const FRAME_MS = 40;

const speaking = (b: Browser, on: boolean, after = 0) =>
  b.until(
    () =>
      b.json.slice(after).find((m) =>
        m.type === "avatar.speaking" && m.speaking === on
      ),
    `avatar.speaking ${on}`,
  );

/** The avatar turn ids in the order they started (from message `after` on). */
const avatarTurns = (b: Browser, after: number) =>
  b.json.slice(after).filter((m) =>
    m.type === "turn.start" && m.role === "avatar"
  ).map((m) => m.turn_id);

/** Probe texts the engine received (each one a response before the test's). */
const probes = (s: LiveStack) =>
  s.engine.peers[0].json.filter((m) =>
    m.type === "user.text" && m.text === "probe"
  ).length;

/** Sends a silent probe turn until the engine receives one (it is connected). */
async function engineUp(s: LiveStack, b: Browser): Promise<void> {
  for (let i = 0; i < 100; i++) {
    b.send({ type: "text", text: "probe" });
    await new Promise((r) => setTimeout(r, 200));
    if (s.engine.peers[0]?.json.some((m) => m.type === "user.text")) return;
  }
  throw new Error("the engine never received text");
}

Deno.test("webrtc_sfu: avatar.speaking per turn on the sender's clock; a cut reports what RTP carried", async () => {
  const janus = await startTestJanus();
  try {
    await withLiveStack(async (s) => {
      const c = await createSession(s, undefined, { transport: "webrtc_sfu" });
      let b = Browser.connect(s, c.session_id, c.client_token);
      await b.opened;
      await b.message((m) => m.type === "webrtc.offer", "webrtc.offer");
      // Unanswered, the session stays activating; its engine hears text once it is up.
      await engineUp(s, b);

      // A whole turn: speaking true, then false once its 0.6 s tone was written.
      const sentAt = Date.now();
      const from1 = b.json.length;
      b.send({ type: "text", text: "speak" });
      const on = await speaking(b, true, from1);
      const onAt = Date.now();
      const off = await speaking(b, false, from1);
      assert.deepEqual(avatarTurns(b, from1), [on.turn_id]);
      assert.equal(off.turn_id, on.turn_id);
      const t0 = on.media_time_ms as number;
      const t1 = off.media_time_ms as number;
      // The write of the frame carrying it plus its offset in that frame; sent after
      // the write.
      assert.ok(
        t0 >= sentAt && t0 <= onAt + FRAME_MS,
        `${sentAt} <= ${t0} <= ${onAt}`,
      );
      assert.ok(t1 > t0 && t1 <= Date.now() + FRAME_MS, `${t0} < ${t1}`);

      // A cut turn: a socket takes over mid-speech, then interrupts.
      const from2 = b.json.length;
      b.send({ type: "text", text: "speak long" });
      const on2 = await speaking(b, true, from2);
      assert.notEqual(on2.turn_id, on.turn_id);
      const old = b;
      b = Browser.connect(s, c.session_id, c.client_token);
      await b.opened;
      // The takeover hears of the speech under way, at its time on the sender's clock.
      assert.deepEqual(await speaking(b, true), on2);
      await old.closed();
      await new Promise((r) => setTimeout(r, 500));
      b.send({ type: "interrupt" });
      const cut: Json = await b.message(
        (m) => m.type === "turn.interrupted",
        "turn.interrupted",
      );
      const off2 = await speaking(b, false);
      assert.equal(cut.turn_id, on2.turn_id);
      assert.equal(off2.turn_id, on2.turn_id);
      const played = cut.played_ms as number;
      // 0.5 s and more of the 1.8 s was written before the cut, not all of it.
      assert.ok(played >= 500 && played < 1800, `played_ms ${played}`);
      assert.ok(b.json.indexOf(off2) < b.json.indexOf(cut));
      const told = await s.engine.waiter.until(
        () => s.engine.peers[0].json.find((m) => m.type === "interrupt"),
        "interrupt at the engine",
      );
      assert.deepEqual(told, {
        type: "interrupt",
        response_id: `resp-${probes(s) + 2}`,
        played_ms: played,
      });
      b.close();
    }, {
      env: { ...janus.env, START_TIMEOUT_MS: "60000" },
      noFfmpegLeft: true,
    });
  } finally {
    await janus.stop();
  }
});
