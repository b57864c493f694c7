import assert from "node:assert/strict";
import {
  EngineStartError,
  type ProviderCredentials,
} from "../../../lib/ports/providers.ts";
import { createVendorAEngine } from "../../../lib/providers/vendor_a_realtime.ts";
import { providerDeps, recordEvents } from "../../fakes/fake_ws.ts";
import { startVendorAFake } from "../../fakes/vendor_a_fake.ts";
import {
  expectSamples,
  expectTurnError,
  sendOneSecond,
  startEngine,
} from "./_helpers.ts";

const SECRET = "ek_test_ephemeral_secret_0123456789";
const creds: ProviderCredentials = {
  type: "vendor_a_realtime",
  client_secret: SECRET,
};

function setup(secret = SECRET) {
  const fake = startVendorAFake(secret);
  let t = 1_000_000;
  const clock = { now: () => t, advance: (ms: number) => t += ms };
  const deps = providerDeps({
    endpoints: { vendorARealtimeUrl: fake.url },
    now: clock.now,
  });
  return { fake, deps, clock, factory: createVendorAEngine(deps) };
}

Deno.test("vendor_a_realtime against a fake realtime API over wss", async (t) => {
  const { fake, deps, clock, factory } = setup();
  const events = recordEvents();
  const conn = await startEngine(factory, creds, {
    events,
    sessionId: "session:a",
  });
  try {
    await t.step(
      "bearer client_secret on the upgrade; session.update sent",
      async () => {
        const peer = await fake.peer();
        assert.equal(peer.headers.get("authorization"), `Bearer ${SECRET}`);
        const update = await fake.message("session.update");
        assert.deepEqual(
          (update.session as { audio: unknown }).audio,
          {
            input: { format: { type: "audio/pcm", rate: 24000 } },
            output: { format: { type: "audio/pcm", rate: 24000 } },
          },
        );
      },
    );

    await t.step("session.created → onReady at 24 kHz", async () => {
      await events.waiter.until(() => events.ready.length > 0, "ready");
      assert.deepEqual(events.ready, [24000]);
    });

    await t.step(
      "text turn → item + response.create, audio and agent transcripts",
      async () => {
        conn.sendText("hello");
        await events.waiter.until(
          () => events.ends.length === 1,
          "response.done",
        );
        const peer = await fake.peer();
        const item = peer.json.find((m) =>
          m.type === "conversation.item.create"
        );
        assert.deepEqual(item?.item, {
          type: "message",
          role: "user",
          content: [{ type: "input_text", text: "hello" }],
        });
        assert.ok(peer.json.some((m) => m.type === "response.create"));
        assert.deepEqual(events.starts, ["resp_1"]);
        assert.deepEqual(events.ends, ["resp_1"]);
        assert.equal(events.audioSamples(), 960);
        assert.ok(events.audio.every((a) => a.rate === 24000));
        assert.deepEqual(events.transcripts, [
          { role: "agent", text: "you said ", final: false },
          { role: "agent", text: "you said hello", final: false },
          // Sent after its audio: placed where its last words' audio begins.
          { role: "agent", text: "you said hello", final: true, audioMs: 40 },
        ]);
      },
    );

    await t.step(
      "user audio arrives as base64 appends at 24 kHz, frames < 1 KiB",
      async () => {
        sendOneSecond(conn, 16000);
        await expectSamples(fake.waiter, fake.appendedSamples, 24000);
        const peer = await fake.peer();
        const appends = peer.json.filter((m) =>
          m.type === "input_audio_buffer.append"
        );
        assert.ok(appends.every((m) => JSON.stringify(m).length < 1024));
      },
    );

    await t.step("user transcription events → user transcripts", async () => {
      const peer = await fake.peer();
      peer.send({
        type: "conversation.item.input_audio_transcription.completed",
        item_id: "u1",
        content_index: 0,
        transcript: "hi there",
      });
      await events.waiter.until(
        () => events.transcripts.find((x) => x.role === "user"),
        "user transcript",
      );
      assert.deepEqual(events.transcripts.at(-1), {
        role: "user",
        text: "hi there",
        final: true,
      });
    });

    await t.step(
      "interrupt → response.cancel + truncate at the played position",
      async () => {
        conn.sendText("long");
        await events.waiter.until(
          () => events.audioSamples() === 1440,
          "audio",
        );
        clock.advance(5);
        conn.interrupt({ responseId: "resp_2", playedMs: 5 });
        await events.waiter.until(() => events.ends.length === 2, "cancelled");
        const peer = await fake.peer();
        assert.ok(peer.json.some((m) => m.type === "response.cancel"));
        const trunc = await fake.waiter.until(
          () => peer.json.find((m) => m.type === "conversation.item.truncate"),
          "truncate",
        );
        assert.deepEqual(trunc, {
          type: "conversation.item.truncate",
          item_id: "item-resp_2",
          content_index: 0,
          audio_end_ms: 5,
        });
        assert.equal(events.audioSamples(), 1440);
      },
    );

    await t.step(
      "speech_started during a response → barge-in cancel; the cut truncates",
      async () => {
        conn.sendText("long");
        await events.waiter.until(() => events.starts.length === 3, "start");
        (await fake.peer()).send({ type: "input_audio_buffer.speech_started" });
        await events.waiter.until(() => events.ends.length === 3, "cancelled");
        assert.equal(events.bargeIns, 1);
        const peer = await fake.peer();
        assert.equal(
          peer.json.filter((m) => m.type === "response.cancel").length,
          2,
        );
        // The media plane answers the barge-in with what the browser was streamed,
        // clamped to the 20 ms of audio the item had.
        conn.interrupt({ responseId: events.starts[2], playedMs: 900 });
        const trunc = await fake.waiter.until(
          () =>
            peer.json.filter((m) => m.type === "conversation.item.truncate")[1],
          "the barge-in's truncate",
        );
        assert.equal((trunc as { audio_end_ms: number }).audio_end_ms, 20);
      },
    );

    await t.step(
      "a failed turn → one non-fatal llm_failed, the session lives",
      async () => {
        await expectTurnError(conn, events, () => events.ends.length === 4, {
          code: "llm_failed",
          message: "model overloaded",
        });
      },
    );

    await t.step(
      "an interrupt naming what was streamed truncates there, once a response",
      async () => {
        const peer = await fake.peer();
        const sent = (type: string) =>
          peer.json.filter((m) => m.type === type).length;
        const [cancels, truncates] = [
          sent("response.cancel"),
          sent("conversation.item.truncate"),
        ];
        conn.sendText("long");
        await events.waiter.until(() => events.starts.length === 5, "start");
        const heard = events.audioSamples();
        await events.waiter.until(
          () => events.audioSamples() > heard,
          "audio",
        );
        const responseId = events.starts[4];
        conn.interrupt({ responseId, playedMs: 12.7 });
        conn.interrupt({ responseId, playedMs: 20 });
        await events.waiter.until(() => events.ends.length === 5, "cancelled");
        const trunc = await fake.waiter.until(
          () =>
            sent("conversation.item.truncate") > truncates &&
            peer.json.findLast((m) => m.type === "conversation.item.truncate"),
          "truncate",
        );
        assert.equal((trunc as { audio_end_ms: number }).audio_end_ms, 12);
        assert.equal(sent("response.cancel"), cancels + 1);
        assert.equal(sent("conversation.item.truncate"), truncates + 1);
      },
    );

    await t.step(
      "after response.done, speech still barges in; the truncate needs the cut",
      async () => {
        const peer = await fake.peer();
        const sent = (type: string) =>
          peer.json.filter((m) => m.type === type).length;
        const [cancels, truncates] = [
          sent("response.cancel"),
          sent("conversation.item.truncate"),
        ];
        const before = events.bargeIns;
        conn.sendText("hello");
        await events.waiter.until(() => events.ends.length === 6, "done");
        peer.send({
          type: "input_audio_buffer.speech_started",
          event_id: "e1",
          audio_start_ms: 0,
          item_id: "u2",
        });
        await events.waiter.until(() => events.bargeIns > before, "barge-in");
        conn.interrupt({ responseId: events.starts[5], playedMs: 7 });
        await fake.waiter.until(
          () => sent("conversation.item.truncate") > truncates,
          "truncate",
        );
        assert.equal(
          (peer.json.findLast((m) =>
            m.type === "conversation.item.truncate"
          ) as { audio_end_ms: number }).audio_end_ms,
          7,
        );
        assert.equal(sent("response.cancel"), cancels, "no response to cancel");
        assert.deepEqual(fake.problems(), []);
      },
    );

    await t.step("graceful end: close handshake answered → true", async () => {
      assert.equal(await conn.end(5000), true);
      assert.deepEqual(events.closes, [{ clean: true, reason: "ended" }]);
      assert.ok(deps.log.lines.every((l) => !l.includes(SECRET)));
    });
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_a_realtime end() is false when the API never answers", async () => {
  const { fake, factory } = setup();
  const events = recordEvents();
  const conn = await startEngine(factory, creds, {
    events,
    sessionId: "session:b",
  });
  try {
    await events.waiter.until(() => events.ready.length > 0, "ready");
    fake.server.freeze();
    assert.equal(await conn.end(200), false);
    assert.equal(events.closes[0].clean, false);
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_a_realtime refused upgrade (bad secret) → EngineStartError refused", async () => {
  const { fake, factory } = setup("another-secret");
  try {
    await assert.rejects(
      startEngine(factory, creds, { sessionId: "session:c" }),
      (err) =>
        err instanceof EngineStartError && err.kind === "refused" &&
        !err.message.includes(SECRET),
    );
  } finally {
    await fake.close();
  }
});

Deno.test("vendor_a_realtime unexpected close → onClose unclean", async () => {
  const { fake, factory } = setup();
  const events = recordEvents();
  const conn = await startEngine(factory, creds, {
    events,
    sessionId: "session:d",
  });
  try {
    (await fake.peer()).close(1000);
    await events.waiter.until(() => events.closes.length > 0, "close");
    assert.equal(events.closes[0].clean, false);
  } finally {
    conn.close();
    await fake.close();
  }
});
