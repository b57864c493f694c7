import assert from "node:assert/strict";
import {
  EngineStartError,
  type ProviderCredentials,
} from "../../../lib/ports/providers.ts";
import {
  createVendorCEngine,
  vendorCUrl,
} from "../../../lib/providers/vendor_c.ts";
import { providerDeps, recordEvents } from "../../fakes/fake_ws.ts";
import {
  startVendorCFake,
  VENDOR_C_API_KEY,
} from "../../fakes/vendor_c_fake.ts";
import {
  expectSamples,
  expectTurnError,
  sendOneSecond,
  startEngine,
} from "./_helpers.ts";

function setup() {
  const fake = startVendorCFake();
  const deps = providerDeps({ endpoints: { vendorCUrl: fake.url } });
  return {
    fake,
    deps,
    factory: createVendorCEngine(deps, { responseIdleMs: 400 }),
  };
}

const start = (
  factory: ReturnType<typeof setup>["factory"],
  credentials: ProviderCredentials,
  events = recordEvents(),
) => startEngine(factory, credentials, { events, sessionId: "session:c" });

const PUBLIC: ProviderCredentials = {
  type: "vendor_c",
  agent_id: "public-agent",
};

Deno.test("vendor_c against a fake conversational-agent socket", async (t) => {
  const { fake, factory } = setup();
  const events = recordEvents();
  const conn = await start(factory, PUBLIC, events);
  try {
    await t.step(
      "public agent: agent_id in the query; initiation data sent",
      async () => {
        const peer = await fake.peer();
        assert.equal(peer.url.pathname, "/v1/convai/conversation");
        assert.equal(peer.url.searchParams.get("agent_id"), "public-agent");
        await fake.message("conversation_initiation_client_data");
      },
    );

    await t.step(
      "metadata → onReady at the agent's PCM rate; ping → pong",
      async () => {
        await events.waiter.until(() => events.ready.length > 0, "ready");
        assert.deepEqual(events.ready, [22050]);
        assert.deepEqual(await fake.message("pong"), {
          type: "pong",
          event_id: 7,
        });
      },
    );

    await t.step(
      "text turn → user_message, audio response, agent transcript",
      async () => {
        conn.sendText("hello");
        await events.waiter.until(() => events.ends.length === 1, "idle end");
        assert.equal((await fake.message("user_message")).text, "hello");
        assert.deepEqual(events.starts, ["r1"]);
        assert.equal(events.audioSamples(), 800);
        assert.ok(events.audio.every((a) => a.rate === 22050));
        assert.deepEqual(events.transcripts, [
          { role: "agent", text: "reply to hello", final: true },
        ]);
      },
    );

    await t.step(
      "user audio → base64 chunks at the negotiated 16 kHz",
      async () => {
        sendOneSecond(conn, 48000);
        await expectSamples(fake.waiter, fake.userSamples, 16000);
        const peer = await fake.peer();
        const chunks = peer.json.filter((m) => "user_audio_chunk" in m);
        assert.ok(chunks.every((m) => JSON.stringify(m).length < 1024));
      },
    );

    await t.step(
      "interrupt → user_activity reaches the agent; rest dropped",
      async () => {
        conn.sendText("long");
        await events.waiter.until(
          () => events.audioSamples() === 1200,
          "audio",
        );
        conn.interrupt();
        assert.equal(events.ends.length, 2);
        const peer = await fake.peer();
        await fake.waiter.until(
          () => peer.json.some((m) => m.type === "user_activity"),
          "user_activity",
        );
        conn.sendText("hello");
        await events.waiter.until(() => events.ends.length === 3, "next turn");
        assert.equal(events.audioSamples(), 2000);
      },
    );

    await t.step(
      "interruption event → barge-in, older audio dropped",
      async () => {
        conn.sendText("barge");
        await events.waiter.until(
          () => events.transcripts.find((x) => x.role === "user"),
          "user transcript",
        );
        assert.equal(events.bargeIns, 1);
        assert.equal(events.ends.length, 4);
        assert.equal(events.audioSamples(), 2400);
        // The agent's text is corrected to what was said before the interruption.
        assert.deepEqual(
          events.transcripts.find((x) => "correction" in x),
          {
            role: "agent",
            text: "I was saying",
            final: true,
            correction: true,
          },
        );
      },
    );

    await t.step(
      "after an interrupt, the next turn's audio plays even before its text",
      async () => {
        conn.sendText("long");
        const before = events.audioSamples();
        await events.waiter.until(
          () => events.audioSamples() === before + 400,
          "audio",
        );
        conn.interrupt();
        conn.sendText("audio first");
        await events.waiter.until(
          () => events.transcripts.some((x) => x.text === "audio came first"),
          "the next turn",
        );
        await events.waiter.until(
          () => events.audioSamples() === before + 1200,
          "both chunks of the next turn (the cut turn's rest dropped)",
        );
      },
    );

    await t.step(
      "an agent waiting for its client tool gets an is_error result and goes on",
      async () => {
        conn.sendText("tool");
        const result = await fake.waiter.until(
          () => fake.peers[0].json.find((m) => m.type === "client_tool_result"),
          "client_tool_result",
        );
        assert.deepEqual(result, {
          type: "client_tool_result",
          tool_call_id: result.tool_call_id,
          result: "Client tool with name open_door is not defined on client",
          is_error: true,
        });
        await events.waiter.until(
          () => events.transcripts.some((x) => x.text === "the tool failed"),
          "the agent's answer after its tool",
        );
        assert.deepEqual(fake.problems(), []);
      },
    );

    await t.step(
      "error event mid-session → non-fatal per-turn error",
      async () => {
        await expectTurnError(conn, events, () => events.errors.length > 0, {
          code: "stt_failed",
          message: "speech-to-text unavailable",
        });
      },
    );

    await t.step("graceful end → close handshake → true", async () => {
      assert.equal(await conn.end(5000), true);
      assert.deepEqual(events.closes, [{ clean: true, reason: "ended" }]);
    });
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_c private agents: signed_url as given, api_key only in a header", async (t) => {
  const { fake, deps, factory } = setup();
  try {
    await t.step("signed_url is used directly", async () => {
      const events = recordEvents();
      const signed =
        `${fake.url}?agent_id=private&conversation_signature=sig-ok`;
      const conn = await start(factory, {
        type: "vendor_c",
        agent_id: "private",
        signed_url: signed,
      }, events);
      await events.waiter.until(() => events.ready.length > 0, "ready");
      assert.equal(
        fake.peers[0].url.searchParams.get("conversation_signature"),
        "sig-ok",
      );
      assert.equal(await conn.end(5000), true);
    });

    await t.step(
      "api_key without signed_url → header, never the URL",
      async () => {
        const events = recordEvents();
        const conn = await start(factory, {
          type: "vendor_c",
          agent_id: "private",
          api_key: VENDOR_C_API_KEY,
        }, events);
        await events.waiter.until(() => events.ready.length > 0, "ready");
        const peer = fake.peers[1];
        assert.equal(peer.headers.get("xi-api-key"), VENDOR_C_API_KEY);
        assert.ok(!peer.url.href.includes(VENDOR_C_API_KEY));
        assert.equal(await conn.end(5000), true);
        assert.ok(deps.log.lines.every((l) => !l.includes(VENDOR_C_API_KEY)));
      },
    );

    await t.step("bad signature → refused", async () => {
      await assert.rejects(
        start(factory, {
          type: "vendor_c",
          agent_id: "private",
          signed_url: `${fake.url}?conversation_signature=forged`,
        }),
        (e) => e instanceof EngineStartError && e.kind === "refused",
      );
    });
  } finally {
    await fake.close();
  }
});

Deno.test("vendorCUrl() refuses a signed_url off the configured endpoint", () => {
  const endpoint = "wss://api.vendor-c.example/v1/convai/conversation";
  for (
    const bad of [
      "wss://evil.example/v1/convai/conversation?x=1",
      "wss://api.vendor-c.example/other?x=1",
      "ws://api.vendor-c.example/v1/convai/conversation",
      "not a url",
    ]
  ) {
    assert.throws(
      () => vendorCUrl(endpoint, { agent_id: "a", signed_url: bad }),
      (e) => e instanceof EngineStartError && e.kind === "misconfigured",
    );
  }
  assert.equal(
    vendorCUrl(endpoint, { agent_id: "a b" }).href,
    `${endpoint}?agent_id=a+b`,
  );
});

Deno.test("vendor_c max_duration_exceeded ends the conversation (provider_ended)", async () => {
  const { fake, factory } = setup();
  const events = recordEvents();
  const conn = await start(factory, PUBLIC, events);
  try {
    await events.waiter.until(() => events.ready.length > 0, "ready");
    conn.sendText("max duration");
    await events.waiter.until(() => events.closes.length > 0, "closed");
    assert.deepEqual(events.closes, [{
      clean: false,
      reason: "the conversation reached its maximum duration",
      code: 1000,
    }]);
    assert.deepEqual(events.errors, []);
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_c end() is false when the agent never answers", async () => {
  const { fake, factory } = setup();
  const events = recordEvents();
  const conn = await start(factory, PUBLIC, events);
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
