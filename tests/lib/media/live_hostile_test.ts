/**
 * LiveSession against hostile or faulty input on a fake socket: oversized frames, schema
 * faults, floods, throws from engine, renderer or socket, stray signalling, agent audio
 * past the renderer's bound.
 */
import assert from "node:assert/strict";
import type { EngineConnection } from "../../../lib/ports/providers.ts";
import { MAX_FRAME_BYTES } from "../../../lib/media/protocol.ts";
import {
  capturingRender,
  type SlowSocket,
  withLiveSession,
} from "./_live_session.ts";

/** An engine connection that records what the browser sent it. */
function recordingEngine(): EngineConnection & {
  audio: number[];
  texts: string[];
} {
  const audio: number[] = [];
  const texts: string[] = [];
  return {
    audio,
    texts,
    sendUserAudio: (pcm) => audio.push(pcm.length),
    sendText: (text) => texts.push(text),
    interrupt: () => {},
    end: () => Promise.resolve(true),
    close: () => {},
  };
}

function frame(ws: SlowSocket, data: string | ArrayBuffer): void {
  ws.onmessage!(new MessageEvent("message", { data }));
}

const invalidCount = (ws: SlowSocket) =>
  ws.json.filter((m) => m.type === "error" && m.code === "invalid_message")
    .length;

Deno.test("LiveSession refuses frames over 64 KiB unread, then closes the socket with 1009", () =>
  withLiveSession((live, ws) => {
    const engine = recordingEngine();
    live.engine = engine;
    frame(ws, new ArrayBuffer(MAX_FRAME_BYTES)); // exactly 64 KiB: fine
    assert.deepEqual(engine.audio, [MAX_FRAME_BYTES / 2]);
    frame(ws, new ArrayBuffer(MAX_FRAME_BYTES + 2));
    const text = JSON.stringify({ type: "text", text: "é".repeat(33_000) });
    assert.ok(text.length < MAX_FRAME_BYTES, "over in UTF-8 only");
    frame(ws, text);
    assert.deepEqual(engine.audio, [MAX_FRAME_BYTES / 2], "never decoded");
    assert.deepEqual(engine.texts, [], "never parsed");
    assert.equal(invalidCount(ws), 2);
    assert.equal(ws.closeCode, null, "two are refused, the socket lives");
    assert.equal(live.stats.oversizeFrames, 2);
    frame(ws, new ArrayBuffer(1024 * 1024));
    assert.equal(ws.closeCode, 1009, "the third closes it");
    assert.equal(invalidCount(ws), 2);
  }));

Deno.test("LiveSession parses every frame by its schema: wrong types, odd PCM and absurd rates are invalid_message", () =>
  withLiveSession((live, ws) => {
    const engine = recordingEngine();
    live.engine = engine;
    const bad = [
      { type: "text", text: { toString: 0 } },
      { type: "text", text: ["a"] },
      { type: "text", text: "" },
      { type: "audio.config", sample_rate: "24000" },
      { type: "audio.config", sample_rate: 1e9 },
      { type: "audio.config", sample_rate: 44100.5 },
      { type: { toString: 0 } },
      { type: "nope" },
      [],
      null,
    ];
    for (const m of bad) frame(ws, JSON.stringify(m));
    frame(ws, "{not json");
    frame(ws, new ArrayBuffer(3)); // odd-length PCM
    frame(ws, new ArrayBuffer(0));
    assert.equal(invalidCount(ws), bad.length + 3);
    assert.deepEqual(engine.texts, []);
    assert.deepEqual(engine.audio, []);
    frame(ws, JSON.stringify({ type: "audio.config", sample_rate: 8000 }));
    frame(ws, JSON.stringify({ type: "text", text: "fine", extra: 1 }));
    frame(ws, new ArrayBuffer(320));
    assert.deepEqual(engine.texts, ["fine"]);
    assert.deepEqual(engine.audio, [160]);
  }));

Deno.test("LiveSession gates floods per socket: text frames and faster-than-real-time audio", () =>
  withLiveSession((live, ws) => {
    const engine = recordingEngine();
    live.engine = engine;
    for (let i = 0; i < 500; i++) frame(ws, JSON.stringify({ type: "ping" }));
    const pongs = ws.json.filter((m) => m.type === "pong").length;
    assert.ok(pongs <= 60, `pongs bounded by the burst: ${pongs}`);
    assert.ok(invalidCount(ws) <= 20, "errors sent back are bounded too");
    // 24 kHz default: 4 s of audio at once pass, then the rest is dropped.
    for (let i = 0; i < 100; i++) frame(ws, new ArrayBuffer(48_000)); // 1 s each
    assert.equal(engine.audio.length, 4);
    assert.ok(live.stats.framesThrottled >= 96 + 440);
  }));

Deno.test("LiveSession contains throws: engine → provider, renderer → render, socket → socket; nothing escapes", () =>
  withLiveSession((live, ws) => {
    const failures: Array<[string, string, string]> = [];
    live.onFailed = (why, source, reason) =>
      failures.push([source, why, reason]);
    const render = capturingRender();
    render.pushAudio = () => {
      throw new Error("boom in the renderer's push");
    };
    live.startRendering(render);
    const events = live.engineEvents(() => {});
    events.onAgentAudio(new Int16Array(10), 24000);
    assert.deepEqual(failures.at(-1)?.[0], "provider");

    const engine = recordingEngine();
    engine.sendText = () => {
      throw new Error("boom in the engine's send");
    };
    live.engine = engine;
    frame(ws, JSON.stringify({ type: "text", text: "hi" }));
    assert.deepEqual(failures.at(-1)?.[0], "socket");

    ws.sendThrows = new Error("boom in the socket's send");
    render.sink().onInit("video/mp4", new Uint8Array([1]));
    assert.deepEqual(failures.at(-1)?.[0], "render");
    assert.equal(failures.length, 3);
    // Each ends the session with the end reason of its source.
    assert.deepEqual(failures.map((f) => f[2]), [
      "provider_failed",
      "instance_lost",
      "render_failed",
    ]);
  }));

Deno.test("LiveSession: webrtc.* signalling is an invalid_message on a websocket_fmp4 session; malformed ones are refused by the schema", () =>
  withLiveSession((live, ws) => {
    assert.equal(live.sfu, null);
    const good = [
      { type: "webrtc.answer", sdp: "v=0\r\n" },
      { type: "webrtc.candidate", candidate: null },
      {
        type: "webrtc.candidate",
        candidate: { candidate: "candidate:1 1 udp 1 10.0.0.1 9 typ host" },
      },
    ];
    const bad = [
      { type: "webrtc.answer", sdp: "" },
      { type: "webrtc.answer", sdp: "x".repeat(33 * 1024) },
      { type: "webrtc.answer", sdp: { toString: 0 } },
      { type: "webrtc.candidate" },
      { type: "webrtc.candidate", candidate: { candidate: 5 } },
      { type: "webrtc.candidate", candidate: { candidate: "x".repeat(1025) } },
      {
        type: "webrtc.candidate",
        candidate: { candidate: "c", sdpMLineIndex: -1 },
      },
      { type: "webrtc.offer", sdp: "v=0\r\n" },
    ];
    for (const m of [...good, ...bad]) frame(ws, JSON.stringify(m));
    assert.equal(invalidCount(ws), good.length + bad.length);
    assert.equal(live.stats.invalidMessages, good.length + bad.length);
  }));

Deno.test("LiveSession: agent audio past the renderer's bound ends the session provider_failed, once", () =>
  withLiveSession((live) => {
    const failures: Array<[string, string, string]> = [];
    live.onFailed = (why, source, reason) =>
      failures.push([source, why, reason]);
    const render = capturingRender();
    let pushes = 0;
    render.pushAudio = () => ++pushes < 3;
    live.startRendering(render);
    const events = live.engineEvents(() => {});
    events.onResponseStart("r1");
    for (let i = 0; i < 5; i++) {
      events.onAgentAudio(new Int16Array(2400), 24000);
    }
    assert.equal(pushes, 3, "nothing is pushed after the refusal");
    assert.deepEqual(failures, [[
      "provider",
      "the conversation engine sent more audio ahead than the session holds",
      "provider_failed",
    ]]);
    return Promise.resolve();
  }));
