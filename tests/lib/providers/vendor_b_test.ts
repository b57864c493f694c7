import assert from "node:assert/strict";
import {
  EngineStartError,
  type ProviderCredentials,
} from "../../../lib/providers/port.ts";
import { createVendorBEngine } from "../../../lib/providers/vendor_b.ts";
import {
  providerDeps,
  recordEvents,
  sampleCount,
} from "../../fakes/fake_ws.ts";
import { startVendorBFake } from "../../fakes/vendor_b_fake.ts";
import { expectSamples, sendOneSecond, startEngine } from "./_helpers.ts";

const TOKEN = "vb-access-token-0123456789abcdef";
const creds: ProviderCredentials = {
  type: "vendor_b",
  access_token: TOKEN,
  agent_id: "agent-42",
};

function setup(token = TOKEN, stubborn = false) {
  const fake = startVendorBFake({ token, stubborn });
  const deps = providerDeps({ endpoints: { vendorBUrl: fake.url } });
  return { fake, deps, factory: createVendorBEngine(deps) };
}

const start = (
  factory: ReturnType<typeof setup>["factory"],
  events = recordEvents(),
) => startEngine(factory, creds, { events, sessionId: "session:b" });

Deno.test("vendor_b speaks the documented protocol over wss", async (t) => {
  const { fake, deps, factory } = setup();
  const events = recordEvents();
  const conn = await start(factory, events);
  try {
    await t.step(
      "bearer access_token on the upgrade; start carries agent_id",
      async () => {
        const peer = await fake.peer();
        assert.equal(peer.headers.get("authorization"), `Bearer ${TOKEN}`);
        assert.deepEqual(await fake.message("start"), {
          type: "start",
          agent_id: "agent-42",
          input_audio: { encoding: "pcm_s16le", sample_rate: 16000 },
        });
      },
    );

    await t.step("ready → onReady with the output rate", async () => {
      await events.waiter.until(() => events.ready.length > 0, "ready");
      assert.deepEqual(events.ready, [22050]);
    });

    await t.step(
      "text turn → binary and base64 audio, both transcripts",
      async () => {
        conn.sendText("hi");
        await events.waiter.until(() => events.ends.length === 1, "end");
        assert.deepEqual((await fake.message("text")).text, "hi");
        assert.deepEqual(events.starts, ["b1"]);
        assert.equal(events.audioSamples(), 1000);
        assert.ok(events.audio.every((a) => a.rate === 22050));
        assert.deepEqual(events.transcripts, [
          { role: "user", text: "hi", final: true },
          { role: "agent", text: "reply to hi", final: true },
        ]);
      },
    );

    await t.step(
      "user audio → binary PCM at 16 kHz in ≤1 KiB frames",
      async () => {
        const peer = await fake.peer();
        sendOneSecond(conn, 24000);
        await expectSamples(fake.waiter, () => sampleCount(peer.binary), 16000);
        assert.ok(peer.binary.every((f) => f.length <= 1024));
      },
    );

    await t.step(
      "interrupt reaches the agent; in-flight audio dropped",
      async () => {
        conn.sendText("long");
        await events.waiter.until(
          () => events.audioSamples() === 1500,
          "audio",
        );
        conn.interrupt();
        await events.waiter.until(() => events.ends.length === 2, "end");
        assert.ok((await fake.peer()).json.some((m) => m.type === "interrupt"));
        assert.equal(events.audioSamples(), 1500);
      },
    );

    await t.step("mid-turn error → non-fatal llm_failed", async () => {
      conn.sendText("fail");
      await events.waiter.until(() => events.ends.length === 3, "end");
      assert.deepEqual(events.errors, [{
        code: "llm_failed",
        fatal: false,
        message: "llm timeout",
      }]);
    });

    await t.step(
      "graceful end → end message, agent closes → true",
      async () => {
        assert.equal(await conn.end(5000), true);
        assert.ok((await fake.peer()).json.some((m) => m.type === "end"));
        assert.deepEqual(events.closes, [{ clean: true, reason: "ended" }]);
        assert.ok(deps.log.lines.every((l) => !l.includes(TOKEN)));
      },
    );
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_b end() is false when the agent never closes", async () => {
  const { fake, factory } = setup(TOKEN, true);
  const events = recordEvents();
  const conn = await start(factory, events);
  try {
    await events.waiter.until(() => events.ready.length > 0, "ready");
    assert.equal(await conn.end(200), false);
    assert.equal(events.closes[0].clean, false);
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("vendor_b refused upgrade → EngineStartError refused", async () => {
  const { fake, factory } = setup("other-token");
  try {
    await assert.rejects(
      start(factory),
      (e) => e instanceof EngineStartError && e.kind === "refused",
    );
  } finally {
    await fake.close();
  }
});
