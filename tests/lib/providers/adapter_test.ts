import assert from "node:assert/strict";
import {
  credentialsFor,
  errorText,
  MAX_ENGINE_BUFFERED_BYTES,
  parseUrl,
  USER_AUDIO_BURST_MS,
} from "../../../lib/providers/adapter.ts";
import { createExternalEngine } from "../../../lib/providers/external_engine.ts";
import {
  type EngineConnection,
  EngineStartError,
  type UserAudioStats,
} from "../../../lib/ports/providers.ts";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import {
  providerDeps,
  recordEvents,
  sampleCount,
  tone,
} from "../../fakes/fake_ws.ts";
import { startEngine } from "./_helpers.ts";

Deno.test("credentialsFor() narrows matching credentials and refuses others", () => {
  const creds = { type: "vendor_b", access_token: "t", agent_id: "a" } as const;
  assert.equal(credentialsFor(creds, "vendor_b").agent_id, "a");
  assert.throws(
    () => credentialsFor(creds, "vendor_c"),
    (e) =>
      e instanceof EngineStartError && e.kind === "misconfigured" &&
      e.message === "credentials mismatch",
  );
});

Deno.test("parseUrl() names the field, never the URL, when it cannot parse", () => {
  assert.equal(parseUrl("wss://x.example/a", "m").pathname, "/a");
  assert.throws(
    () => parseUrl("not a url secret-token", "endpoint invalid"),
    (e) =>
      e instanceof EngineStartError && e.kind === "misconfigured" &&
      e.message === "endpoint invalid",
  );
});

Deno.test("errorText() cuts to 500 characters and falls back on no text", () => {
  assert.equal(errorText("x".repeat(600)).length, 500);
  assert.equal(errorText(""), "provider error");
  assert.equal(errorText(undefined, "engine error"), "engine error");
  assert.equal(errorText("boom"), "boom");
});

const KEY = "engine-key-backpressure-0123";
const RATE = 24000;
/** One second of audio at `RATE`: 48,000 bytes on the wire. */
const SECOND = tone(RATE, RATE);

/** An external_engine connection on the ECEP fake at `RATE`, ready, on clock `now`. */
async function readyEngine(now: () => number) {
  const fake = startEcepFake({ key: KEY, agentRate: 16000 });
  const deps = providerDeps({ now });
  const events = recordEvents();
  const conn = await startEngine(createExternalEngine(deps), {
    type: "external_engine",
    url: fake.url,
    auth_headers: { "x-engine-key": KEY },
    user_sample_rate: RATE,
  }, { events, sessionId: "session:bp" });
  await events.waiter.until(() => events.ready.length > 0, "ready");
  return { fake, deps, conn };
}

function stats(conn: EngineConnection): UserAudioStats {
  assert.ok(conn.userAudioStats, "the connection exposes its audio counters");
  return conn.userAudioStats();
}

/** Sends a text turn and waits until the engine has it: every earlier frame arrived. */
async function flushed(
  fake: ReturnType<typeof startEcepFake>,
  conn: EngineConnection,
  n: number,
): Promise<void> {
  conn.sendText(`marker-${n}`);
  await fake.waiter.until(
    () => fake.peers[0]?.json.some((m) => m.text === `marker-${n}`),
    `marker ${n}`,
  );
}

const dropLines = (deps: ReturnType<typeof providerDeps>) =>
  deps.log.lines.filter((l) => l.includes("user audio dropped"));

Deno.test("EngineLink drops user audio while the engine is not reading, counts it, and resumes", async () => {
  let now = 0;
  const { fake, deps, conn } = await readyEngine(() => now);
  try {
    const peer = await fake.peer();
    fake.server.stall();
    // The engine reads nothing: kernel buffers fill, then the socket's own queue.
    let sent = 0;
    while (stats(conn).droppedBackpressure === 0) {
      assert.ok(
        sent * SECOND.length * 2 < 64 * MAX_ENGINE_BUFFERED_BYTES,
        "audio was never dropped",
      );
      now += 1000; // real time: the rate cap stays out of the way
      conn.sendUserAudio(SECOND, RATE);
      sent++;
      await new Promise((r) => setTimeout(r, 0));
    }
    for (let i = 0; i < 20; i++) {
      now += 1000;
      conn.sendUserAudio(SECOND, RATE);
      sent++;
      await new Promise((r) => setTimeout(r, 0));
    }
    const s = stats(conn);
    assert.ok(s.droppedBackpressure >= 21, JSON.stringify(s));
    assert.equal(s.droppedOverRate, 0);
    assert.equal(s.sent + s.droppedBackpressure, sent);
    assert.equal(dropLines(deps).length, 1, "logged once, not per frame");
    assert.match(dropLines(deps)[0], /session:bp/);

    fake.server.resume();
    await flushed(fake, conn, 1);
    assert.equal(sampleCount(peer.binary), s.sent * RATE);

    now += 1000;
    conn.sendUserAudio(SECOND, RATE);
    await flushed(fake, conn, 2);
    assert.equal(sampleCount(peer.binary), (s.sent + 1) * RATE);
    assert.equal(stats(conn).droppedBackpressure, s.droppedBackpressure);
    assert.equal(dropLines(deps).length, 1);
  } finally {
    conn.close();
    await fake.close();
  }
});

Deno.test("EngineLink drops user audio arriving faster than twice real time", async () => {
  let now = 1_000_000;
  const { fake, deps, conn } = await readyEngine(() => now);
  try {
    const peer = await fake.peer();
    const burst = USER_AUDIO_BURST_MS / 1000;
    // A burst of `burst` seconds passes at once; the next second does not.
    for (let i = 0; i < burst + 1; i++) conn.sendUserAudio(SECOND, RATE);
    assert.deepEqual(stats(conn), {
      sent: burst,
      droppedBackpressure: 0,
      droppedOverRate: 1,
    });
    // Half a second of wall time earns one second of audio (2× real time).
    now += 500;
    conn.sendUserAudio(SECOND, RATE);
    conn.sendUserAudio(SECOND, RATE);
    assert.deepEqual(stats(conn), {
      sent: burst + 1,
      droppedBackpressure: 0,
      droppedOverRate: 2,
    });
    // The declared rate is what counts: a 48 kHz second costs a second, not two.
    now += 500;
    conn.sendUserAudio(tone(48000, 48000), 48000);
    assert.equal(stats(conn).sent, burst + 2);
    await flushed(fake, conn, 1);
    assert.equal(sampleCount(peer.binary), (burst + 2) * RATE);
    assert.equal(dropLines(deps).length, 1);
  } finally {
    conn.close();
    await fake.close();
  }
});
