import assert from "node:assert/strict";
import { createExternalEngine } from "../../lib/providers/external_engine.ts";
import {
  babble,
  replyFor,
  startExampleEngine,
} from "../../scripts/example_engine.ts";
import { providerDeps, recordEvents, tone } from "../fakes/fake_ws.ts";
import { TEST_CERT, TEST_KEY } from "../fakes/wss_server.ts";

const RATE = 16000;

async function connect(token?: string) {
  const lines: string[] = [];
  const engine = startExampleEngine({
    log: (line) => lines.push(line),
    port: 0,
    cert: TEST_CERT,
    key: TEST_KEY,
    token,
  });
  const events = recordEvents();
  const conn = await createExternalEngine(providerDeps())({
    sessionId: "session:demo",
    credentials: {
      type: "external_engine",
      url: engine.url,
      auth_headers: token ? { Authorization: `Bearer ${token}` } : {},
      user_sample_rate: RATE,
    },
    events,
    signal: new AbortController().signal,
  });
  await events.waiter.until(() => events.ready.length > 0, "session.ready");
  return { engine, events, conn, lines };
}

Deno.test("example engine echoes speech after the user stops (VAD with hangover)", async () => {
  const { engine, events, conn } = await connect("demo-token");
  try {
    assert.match(engine.url, /^wss:\/\/localhost:\d+\/$/);
    assert.deepEqual(events.ready, [RATE]);
    // 0.3 s quiet, 1 s of voice (sent at 48 kHz: the adapter resamples), 0.6 s quiet.
    const quiet = new Int16Array(960);
    for (let i = 0; i < 15; i++) conn.sendUserAudio(quiet, 48000);
    for (let i = 0; i < 50; i++) conn.sendUserAudio(tone(960, 48000), 48000);
    for (let i = 0; i < 30; i++) conn.sendUserAudio(quiet, 48000);
    await events.waiter.until(() => events.ends.length === 1, "echo response");
    assert.equal(events.starts.length, 1);
    assert.deepEqual(events.transcripts[0], {
      role: "user",
      text: "(speech, 1.1 s)",
      final: true,
    });
    assert.equal(events.transcripts[1].role, "agent");
    // The voiced second plus at most the pre-roll and one onset frame.
    const echoed = events.audioSamples();
    assert.ok(echoed >= RATE && echoed <= RATE * 1.15, `echoed ${echoed}`);
    assert.ok(events.audio.every((a) => a.rate === RATE));
    assert.equal(await conn.end(5000), true);
  } finally {
    conn.close();
    await engine.close();
  }
});

Deno.test("example engine answers typed text with babble and stops on interrupt", async (t) => {
  const { engine, events, conn, lines } = await connect();
  try {
    await t.step(
      "user.text → babble response with the reply transcript",
      async () => {
        conn.sendText("hi");
        await events.waiter.until(() => events.ends.length === 1, "response");
        assert.deepEqual(events.transcripts, [
          { role: "agent", text: replyFor("hi"), final: true },
        ]);
        assert.equal(
          events.audioSamples(),
          babble(replyFor("hi"), RATE).length,
        );
      },
    );

    await t.step("interrupt stops the current response early", async () => {
      const long = "tell me a very long story about the sea ".repeat(4);
      conn.sendText(long);
      await events.waiter.until(() => events.starts.length === 2, "start");
      const before = events.audioSamples();
      await events.waiter.until(() => events.audioSamples() > before, "audio");
      conn.interrupt();
      await events.waiter.until(() => events.ends.length === 2, "end");
      const played = events.audioSamples() - before;
      assert.ok(played < babble(replyFor(long), RATE).length);
    });

    await t.step(
      "the user talking over the agent cancels it; the cut is logged",
      async () => {
        conn.sendText("tell me a very long story about the sea ".repeat(4));
        await events.waiter.until(() => events.starts.length === 3, "start");
        const id = events.starts[2];
        const quiet = new Int16Array(960);
        for (let i = 0; i < 10; i++) conn.sendUserAudio(quiet, 48000);
        for (let i = 0; i < 5; i++) conn.sendUserAudio(tone(960, 48000), 48000);
        await events.waiter.until(() => events.cancels.length === 1, "cancel");
        assert.deepEqual(events.cancels, [id]);
        await events.waiter.until(() => events.ends.length === 3, "end");
        // The service answers a cancel with how much of the response was streamed.
        conn.interrupt({ responseId: id, playedMs: 420 });
        for (let i = 0; i < 200 && engine.truncations.length === 0; i++) {
          await new Promise((r) => setTimeout(r, 10));
        }
        assert.equal(engine.truncations[0].response_id, id);
        assert.equal(engine.truncations[0].played_ms, 420);
        assert.ok(engine.truncations[0].total_ms > 420);
        assert.match(
          lines.at(-1) ?? "",
          new RegExp(`^truncated ${id}: the user heard 420 of \\d+ ms$`),
        );
      },
    );

    await t.step("graceful end closes from the engine side", async () => {
      assert.equal(await conn.end(5000), true);
    });
  } finally {
    conn.close();
    await engine.close();
  }
});

Deno.test("example engine refuses an upgrade without its token", async () => {
  const engine = startExampleEngine({
    port: 0,
    cert: TEST_CERT,
    key: TEST_KEY,
    token: "secret",
  });
  try {
    await assert.rejects(
      createExternalEngine(providerDeps())({
        sessionId: "session:x",
        credentials: {
          type: "external_engine",
          url: engine.url,
          auth_headers: {},
          user_sample_rate: RATE,
        },
        events: recordEvents(),
        signal: new AbortController().signal,
      }),
      (e) => e instanceof Error && e.name === "EngineStartError",
    );
  } finally {
    await engine.close();
  }
});

Deno.test("babble() lasts longer for longer text and is deterministic", () => {
  const short = babble("hello there", RATE);
  const long = babble("hello there, how are you doing on this fine day?", RATE);
  assert.ok(short.length > 0.3 * RATE);
  assert.ok(long.length > 2 * short.length);
  assert.deepEqual(babble("hello there", RATE), short);
  assert.ok(short.some((v) => Math.abs(v) > 5000));
});
