/**
 * The vendor_b adapter against a fake Cartesia agents WebSocket on real wss
 * (tests/fakes/vendor_b_fake.ts): the URL, headers and `start` the vendor wants, `ack`
 * as ready, base64 audio both ways in small frames, turns delimited by the audio, the
 * agent's `clear` as barge-in, the browser's interrupt cut locally, no typed turns, and
 * the format the ack confirms. The connection's life (idle, closes, refusals, tokens):
 * vendor_b_connection_test.ts.
 */
import assert from "node:assert/strict";
import { VENDOR_B_CHUNK_SAMPLES } from "../../../lib/providers/vendor_b.ts";
import { type RecordedEvents, recordEvents } from "../../fakes/fake_ws.ts";
import { CARTESIA_AGENTS_VERSION } from "../../fakes/vendor_b_fake.ts";
import { sendOneSecond, startEngine } from "./_helpers.ts";
import { creds, delay, frames, ready, setup, TOKEN } from "./_vendor_b.ts";

/** Waits until the next response's first audio arrives. */
const firstAudio = (events: RecordedEvents, response: number) =>
  events.waiter.until(
    () => events.starts.length >= response && events.audio.length > 0,
    `response ${response}`,
  );

Deno.test("vendor_b speaks the Cartesia agents WebSocket", async (t) => {
  const s = setup();
  const events = recordEvents();
  const conn = await ready(s, events);
  const { fake } = s;
  try {
    await t.step(
      "agent id URL-encoded in the path, bearer token and version headers",
      async () => {
        const peer = await fake.peer();
        assert.equal(peer.url.pathname, "/agents/stream/agent%2042%2Feu");
        assert.equal(peer.headers.get("authorization"), `Bearer ${TOKEN}`);
        assert.equal(
          peer.headers.get("cartesia-version"),
          CARTESIA_AGENTS_VERSION,
        );
      },
    );

    await t.step("start first, with pcm_16000; ack → ready at 16 kHz", () => {
      const first = fake.peers[0].json[0];
      assert.equal(first.event, "start");
      assert.deepEqual(first.config, { input_format: "pcm_16000" });
      assert.equal(typeof first.stream_id, "string");
      assert.deepEqual(events.ready, [16000]);
    });

    await t.step(
      "user audio → base64 media_input at 16 kHz, each frame under 1 KiB",
      async () => {
        sendOneSecond(conn, 24000);
        await fake.waiter.until(
          () => fake.userSamples() >= 15_990,
          "16000 samples at the vendor",
        );
        assert.ok(Math.abs(fake.userSamples() - 16000) <= 2);
        const inputs = frames(fake, "media_input");
        assert.ok(inputs.every((m) => JSON.stringify(m).length < 1024));
        assert.ok(
          inputs.every((m) => m.stream_id === fake.peers[0].json[0].stream_id),
        );
        assert.ok(
          inputs.some((m) =>
            atob((m.media as { payload: string }).payload).length ===
              VENDOR_B_CHUNK_SAMPLES * 2
          ),
        );
      },
    );

    await t.step(
      "agent audio streamed ahead → one response, ended once it would have played",
      async () => {
        const t0 = Date.now();
        fake.say(1000); // sent in ~100 ms
        await events.waiter.until(() => events.ends.length === 1, "end");
        assert.ok(Date.now() - t0 >= 1000, "ended before its audio played");
        assert.deepEqual(events.starts, ["b1"]);
        assert.deepEqual(events.ends, ["b1"]);
        assert.equal(events.audioSamples(), 16000);
        assert.ok(events.audio.every((a) => a.rate === 16000));
      },
    );

    await t.step("the agent's clear → barge-in, response ended", async () => {
      fake.say(3000);
      await firstAudio(events, 2);
      fake.clear();
      await events.waiter.until(() => events.bargeIns === 1, "barge-in");
      assert.deepEqual(events.ends, ["b1", "b2"]);
      const after = events.audioSamples();
      // The media plane's interrupt of the cut response that follows drops nothing.
      conn.interrupt({ responseId: "b2", playedMs: 100 });
      fake.say(200);
      await events.waiter.until(
        () => events.audioSamples() === after + 3200,
        "the next answer",
      );
      assert.equal(events.starts.at(-1), "b3");
    });

    await t.step(
      "browser interrupt → the response ends; the rest of it is dropped",
      async () => {
        await events.waiter.until(() => events.ends.length === 3, "b3 end");
        fake.say(2000);
        await firstAudio(events, 4);
        const cutAt = events.audioSamples();
        conn.interrupt({ responseId: "b4", playedMs: 50 });
        assert.deepEqual(events.ends.at(-1), "b4");
        // The agent streams on (no cancel in the protocol); none of it is used.
        while (fake.streaming()) await delay(20);
        await delay(300); // the adapter's quiet gap (150 ms), and then some
        assert.equal(fake.streaming(), false);
        assert.equal(events.audioSamples(), cutAt);
        // After a quiet gap, the next answer is heard.
        fake.say(100);
        await events.waiter.until(
          () => events.audioSamples() === cutAt + 1600,
          "the answer after the cut",
        );
        assert.equal(events.bargeIns, 1);
      },
    );

    await t.step("no typed turns: textTurns false, nothing sent", () => {
      const before = fake.peers[0].json.length;
      assert.equal(conn.textTurns, false);
      conn.sendText("hello");
      assert.equal(fake.peers[0].json.length, before);
    });

    await t.step(
      "dtmf and custom → ignored, counted in a debug line",
      async () => {
        fake.extras();
        await events.waiter.until(
          () =>
            s.deps.log.lines.filter((l) => l.includes("vendor event ignored"))
              .length === 2,
          "two debug lines",
        );
        const lines = s.deps.log.lines.filter((l) =>
          l.includes("vendor event ignored")
        ).map((l) => JSON.parse(l));
        assert.deepEqual(
          lines.map((l) => [l.level, l.event, l.ignored_events]),
          [
            ["debug", "dtmf", 1],
            ["debug", "custom", 2],
          ],
        );
        assert.deepEqual(events.errors, []);
        assert.equal(conn.invalidFrames?.(), 0);
      },
    );

    await t.step("graceful end: close handshake → true", async () => {
      assert.equal(await conn.end(5000), true);
      assert.deepEqual(events.closes, [{ clean: true, reason: "ended" }]);
      assert.ok(s.deps.log.lines.every((l) => !l.includes(TOKEN)));
    });
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_b: the format the ack confirms is the stream's, both ways", async (t) => {
  await t.step(
    "pcm_24000 → agent audio at 24 kHz, user audio resampled to it",
    async () => {
      const s = setup({ ackFormat: "pcm_24000" });
      const events = recordEvents();
      const conn = await ready(s, events);
      try {
        assert.deepEqual(events.ready, [24000]);
        sendOneSecond(conn, 16000);
        await s.fake.waiter.until(
          () => s.fake.userSamples() >= 23_990,
          "24000 samples at the vendor",
        );
        assert.ok(Math.abs(s.fake.userSamples() - 24000) <= 2);
        s.fake.say(100);
        await events.waiter.until(
          () => events.audioSamples() === 2400,
          "audio",
        );
        assert.ok(events.audio.every((a) => a.rate === 24000));
      } finally {
        conn.close();
        await s.fake.close();
      }
    },
  );
  await t.step("mulaw_8000 → fatal tts_failed", async () => {
    const s = setup({ ackFormat: "mulaw_8000" });
    const events = recordEvents();
    const conn = await startEngine(s.factory, creds, { events });
    try {
      await events.waiter.until(() => events.closes.length > 0, "close");
      assert.deepEqual(events.ready, []);
      assert.deepEqual(events.errors, [{
        code: "tts_failed",
        fatal: true,
        message: "agent audio format is not PCM",
      }]);
    } finally {
      conn.close();
      await s.fake.close();
    }
  });
});
