import assert from "node:assert/strict";
import { createExternalEngine } from "../../../lib/providers/external_engine.ts";
import {
  type EngineConnection,
  EngineStartError,
  type ProviderCredentials,
} from "../../../lib/ports/providers.ts";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import {
  providerDeps,
  recordEvents,
  sampleCount,
} from "../../fakes/fake_ws.ts";
import { startWssServer } from "../../fakes/wss_server.ts";
import {
  expectSamples,
  expectTurnError,
  sendOneSecond,
  startEngine,
} from "./_helpers.ts";

const KEY = "engine-secret-value-0123456789";

function creds(url: string, rate = 24000): ProviderCredentials {
  return {
    type: "external_engine",
    url,
    auth_headers: { "X-Engine-Key": KEY },
    user_sample_rate: rate,
  };
}

async function rejectsWith(
  p: Promise<unknown>,
  kind: EngineStartError["kind"],
): Promise<EngineStartError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof EngineStartError, String(err));
    assert.equal(err.kind, kind, err.message);
    assert.ok(!err.message.includes(KEY));
    return err;
  }
  throw new Error("expected a rejection");
}

Deno.test("external_engine speaks ECEP v1 against a real wss engine", async (t) => {
  const fake = startEcepFake({ key: KEY, agentRate: 16000 });
  const deps = providerDeps();
  const events = recordEvents();
  let conn: EngineConnection | undefined;
  try {
    await t.step(
      "handshake: auth_headers on the upgrade, session.start first",
      async () => {
        conn = await startEngine(
          createExternalEngine(deps),
          creds(fake.url, 16000),
          { events, sessionId: "session:abc" },
        );
        const peer = await fake.peer();
        assert.equal(peer.headers.get("x-engine-key"), KEY);
        const start = await fake.message("session.start");
        assert.deepEqual(start, {
          type: "session.start",
          session_id: "session:abc",
          user_audio: { encoding: "pcm_s16le", sample_rate: 16000 },
        });
        assert.equal(peer.json[0].type, "session.start");
      },
    );

    await t.step("session.ready → onReady with the agent rate", async () => {
      await events.waiter.until(() => events.ready.length > 0, "ready");
      assert.deepEqual(events.ready, [16000]);
    });

    await t.step(
      "user.text → response with audio and an agent transcript",
      async () => {
        conn!.sendText("hello");
        await events.waiter.until(
          () => events.ends.length === 1,
          "response.end",
        );
        const msg = await fake.message("user.text");
        assert.equal(msg.text, "hello");
        assert.deepEqual(events.starts, ["resp-1"]);
        assert.deepEqual(events.ends, ["resp-1"]);
        assert.equal(events.audioSamples(), 1600);
        assert.ok(events.audio.every((a) => a.rate === 16000));
        assert.deepEqual(events.transcripts, [
          { role: "agent", text: "you said hello", final: true },
        ]);
      },
    );

    await t.step(
      "user audio is resampled to user_sample_rate in ≤1 KiB frames",
      async () => {
        const peer = await fake.peer();
        // One second at 48 kHz → one second at 16 kHz.
        sendOneSecond(conn!, 48000);
        await expectSamples(fake.waiter, () => sampleCount(peer.binary), 16000);
        assert.ok(
          peer.binary.every((f) => f.length <= 1024 && f.length % 2 === 0),
        );
      },
    );

    await t.step(
      "interrupt reaches the engine; in-flight audio is dropped",
      async () => {
        const peer = await fake.peer();
        conn!.sendText("long");
        await events.waiter.until(() => events.starts.length === 2, "start");
        await events.waiter.until(
          () => events.audioSamples() === 2400,
          "audio",
        );
        conn!.interrupt();
        await events.waiter.until(() => events.ends.length === 2, "end");
        assert.ok(peer.json.some((m) => m.type === "interrupt"));
        assert.equal(events.audioSamples(), 2400);
      },
    );

    await t.step(
      "response.cancel reaches onResponseCancel (a non-string id is ignored); interrupt carries the cut",
      async () => {
        const peer = await fake.peer();
        peer.send({ type: "response.cancel", response_id: { toString: 0 } });
        peer.send({ type: "response.cancel", response_id: 7 });
        peer.send({ type: "response.cancel", response_id: "resp-2" });
        await events.waiter.until(() => events.cancels.length === 1, "cancel");
        assert.deepEqual(events.cancels, ["resp-2"]);
        conn!.interrupt({ responseId: "resp-2", playedMs: 123.4 });
        await fake.waiter.until(
          () =>
            peer.json.find((m) => m.type === "interrupt" && "played_ms" in m),
          "interrupt with the cut",
        );
        assert.deepEqual(peer.json.at(-1), {
          type: "interrupt",
          response_id: "resp-2",
          played_ms: 123,
        });
      },
    );

    await t.step(
      "a non-fatal engine error mid-turn → per-turn onError",
      async () => {
        await expectTurnError(conn!, events, () => events.ends.length === 3, {
          code: "tts_failed",
          message: "text-to-speech backend failed",
        });
      },
    );

    await t.step(
      "graceful end: session.end, engine closes → true, clean",
      async () => {
        const ok = await conn!.end(5000);
        assert.equal(ok, true);
        assert.ok(
          (await fake.peer()).json.some((m) => m.type === "session.end"),
        );
        assert.deepEqual(events.closes, [{ clean: true, reason: "ended" }]);
      },
    );

    await t.step("credentials never reach the log", () => {
      assert.ok(deps.log.lines.length > 0);
      assert.ok(deps.log.lines.every((l) => !l.includes(KEY)));
    });
  } finally {
    conn?.close();
    await fake.close();
  }
});

Deno.test("external_engine end() resolves false when the engine never closes", async () => {
  const fake = startEcepFake({ key: KEY, stubborn: true });
  const events = recordEvents();
  const conn = await startEngine(
    createExternalEngine(providerDeps()),
    creds(fake.url),
    { events, sessionId: "session:s" },
  );
  try {
    await events.waiter.until(() => events.ready.length > 0, "ready");
    assert.equal(await conn.end(200), false);
    assert.deepEqual(events.closes, [{
      clean: false,
      reason: "engine did not close in time",
    }]);
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("external_engine reports a fatal error and an unexpected close", async (t) => {
  await t.step("fatal error → onError fatal, onClose unclean", async () => {
    const fake = startEcepFake({ key: KEY });
    const events = recordEvents();
    const conn = await startEngine(
      createExternalEngine(providerDeps()),
      creds(fake.url),
      { events, sessionId: "session:f" },
    );
    try {
      await events.waiter.until(() => events.ready.length > 0, "ready");
      conn.sendText("fatal");
      await events.waiter.until(() => events.closes.length > 0, "close");
      assert.deepEqual(events.errors, [{
        code: "llm_failed",
        fatal: true,
        message: "engine crashed",
      }]);
      assert.equal(events.closes[0].clean, false);
    } finally {
      conn.close();
      await fake.close();
    }
  });

  await t.step("engine closes on its own → onClose unclean", async () => {
    const fake = startEcepFake({ key: KEY });
    const events = recordEvents();
    const conn = await startEngine(
      createExternalEngine(providerDeps()),
      creds(fake.url),
      { events, sessionId: "session:g" },
    );
    try {
      await events.waiter.until(() => events.ready.length > 0, "ready");
      (await fake.peer()).close(1000, "going away");
      await events.waiter.until(() => events.closes.length > 0, "close");
      assert.deepEqual(events.closes, [{
        clean: false,
        reason: "engine closed the connection",
        code: 1000,
      }]);
    } finally {
      conn.close();
      await fake.close();
    }
  });
});

Deno.test("external_engine start failures map to EngineStartError kinds", async (t) => {
  const start = (
    url: string,
    deps = providerDeps(),
    signal = new AbortController().signal,
  ) => startEngine(createExternalEngine(deps), creds(url), { signal });

  await t.step("upgrade refused (wrong key) → refused", async () => {
    const fake = startEcepFake({ key: "another-key" });
    try {
      await rejectsWith(start(fake.url), "refused");
    } finally {
      await fake.close();
    }
  });

  await t.step("nothing listening → refused", async () => {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = l.addr.port;
    l.close();
    await rejectsWith(start(`wss://localhost:${port}/`), "refused");
  });

  await t.step("host does not resolve → unavailable", async () => {
    await rejectsWith(start("wss://engine.invalid/"), "unavailable");
  });

  await t.step("no upgrade answer in time → timeout", async () => {
    const silent = startWssServer(() => new Response(null, { status: 500 }));
    silent.freeze();
    try {
      const deps = providerDeps({ connectTimeoutMs: 200 });
      await rejectsWith(start(silent.origin + "/", deps), "timeout");
    } finally {
      await silent.close();
    }
  });

  await t.step("aborted by the caller's timeout signal → timeout", async () => {
    const silent = startWssServer(() => new Response(null, { status: 500 }));
    silent.freeze();
    try {
      await rejectsWith(
        start(silent.origin + "/", providerDeps(), AbortSignal.timeout(100)),
        "timeout",
      );
    } finally {
      await silent.close();
    }
  });

  await t.step("ws:// URL → misconfigured", async () => {
    await rejectsWith(start("ws://localhost:1/"), "misconfigured");
  });

  await t.step(
    "private target refused unless ALLOW_PRIVATE_NETWORK_TARGETS",
    async () => {
      const fake = startEcepFake({ key: KEY });
      try {
        const deps = providerDeps({ allowPrivate: false });
        await rejectsWith(start(fake.url, deps), "refused");
        assert.equal(fake.peers.length, 0);
        const viaDns = providerDeps({
          allowPrivate: false,
          resolver: () => Promise.resolve(["10.1.2.3"]),
        });
        const err = await rejectsWith(
          start("wss://engine.example.com/", viaDns),
          "refused",
        );
        assert.match(err.message, /private/);
        const noDns = providerDeps({
          allowPrivate: false,
          resolver: () => Promise.reject(new Error("NXDOMAIN")),
        });
        await rejectsWith(
          start("wss://engine.example.com/", noDns),
          "unavailable",
        );
      } finally {
        await fake.close();
      }
    },
  );
});
