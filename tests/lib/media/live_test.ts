import { memoryLogger } from "../../../lib/log.ts";
import assert from "node:assert/strict";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { LiveSession } from "../../../lib/media/live.ts";
import { MAX_SOCKET_BUFFERED_BYTES } from "../../../lib/media/downlink.ts";
import type { RenderSession, RenderSink } from "../../../lib/render/port.ts";
import type { EngineConnection } from "../../../lib/providers/port.ts";
import { MAX_FRAME_BYTES } from "../../../lib/media/protocol.ts";
import type { Json } from "./_live.ts";

function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const size = 8 + payload.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, size);
  out.set(new TextEncoder().encode(type), 4);
  let off = 8;
  for (const p of payload) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function u32(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setUint32(i * 4, v));
  return out;
}

const NON_SYNC = 0x00010000;
const SYNC_I_FRAME = 0x02000000;

/** tfhd with default-base-is-moof and optional default_sample_flags. */
function tfhd(trackId: number, defaultFlags?: number): Uint8Array {
  const flags = 0x020000 | (defaultFlags !== undefined ? 0x20 : 0);
  return box(
    "tfhd",
    u32(flags, trackId),
    defaultFlags !== undefined ? u32(defaultFlags) : u32(),
  );
}

/** trun with data_offset and, when given, first_sample_flags. */
function trun(count: number, firstFlags?: number): Uint8Array {
  const flags = 0x1 | (firstFlags !== undefined ? 0x4 : 0);
  return box(
    "trun",
    u32(flags, count, 0),
    firstFlags !== undefined ? u32(firstFlags) : u32(),
  );
}

function segment(...trafs: Uint8Array[]): Uint8Array {
  const moof = box("moof", box("mfhd", u32(0, 1)), ...trafs);
  const mdat = box("mdat", new Uint8Array(16));
  const out = new Uint8Array(moof.length + mdat.length);
  out.set(moof);
  out.set(mdat, moof.length);
  return out;
}

/** The slice of a server WebSocket that LiveSession uses, with a settable buffer. */
class SlowSocket {
  readyState = 1;
  bufferedAmount = 0;
  binaryType = "blob";
  sent: (string | Uint8Array)[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onclose: (() => void) | null = null;
  send(data: string | Uint8Array) {
    if (this.sendThrows) throw this.sendThrows;
    this.sent.push(data);
  }
  closeCode: number | null = null;
  /** When set, `send` throws it (a socket broken in an unexpected way). */
  sendThrows: Error | null = null;
  close(code?: number) {
    this.closeCode = code ?? 1005;
    this.readyState = 3;
  }
  get binary(): Uint8Array[] {
    return this.sent.filter((d): d is Uint8Array => d instanceof Uint8Array);
  }
  /** The text frames sent, parsed. */
  get json(): Json[] {
    const texts = this.sent.filter((d): d is string => typeof d === "string");
    return texts.map((d) => JSON.parse(d));
  }
}

/** A LiveSession on fresh `:memory:` deps, attached as active to a SlowSocket. */
async function withLiveSession(
  fn: (live: LiveSession, ws: SlowSocket) => void | Promise<void>,
): Promise<void> {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:" },
    log: memoryLogger(),
  });
  try {
    const live = new LiveSession(deps, "session:test");
    const ws = new SlowSocket();
    live.attach(ws as unknown as WebSocket, "active");
    await fn(live, ws);
  } finally {
    await closeDeps(deps);
  }
}

/** A render session that hands its sink to the test. */
function capturingRender(): RenderSession & { sink(): RenderSink } {
  let sink: RenderSink | null = null;
  return {
    attach: (s) => sink = s,
    detach: () => sink = null,
    pushAudio: () => true,
    endAudio: () => true,
    markText: () => {},
    interrupt: () => null,
    segmentsRendered: 0,
    stop: () => Promise.resolve({ clean: true }),
    stats: () => ({
      audioLatencyMs: [],
      droppedAudioSamples: 0,
      queuedAudioSamples: 0,
      skippedDraws: 0,
    }),
    sink: () => sink!,
  };
}

const key = () =>
  segment(box("traf", tfhd(1, NON_SYNC), trun(5, SYNC_I_FRAME)));
const delta = () => segment(box("traf", tfhd(1, NON_SYNC), trun(5)));

Deno.test("LiveSession drops media for a slow browser and resumes on a keyframe", () =>
  withLiveSession((live, ws) => {
    const render = capturingRender();
    live.startRendering(render);
    const sink = render.sink();
    sink.onInit(
      'video/mp4; codecs="avc1.42c01e, mp4a.40.2"',
      new Uint8Array([1, 2, 3]),
    );
    sink.onSegment(key());
    sink.onSegment(delta());
    assert.equal(live.stats.segmentsSent, 2);

    ws.bufferedAmount = MAX_SOCKET_BUFFERED_BYTES + 1; // the browser stopped reading
    sink.onSegment(delta());
    sink.onSegment(key());
    assert.equal(
      live.stats.segmentsDropped,
      2,
      "nothing queues while the buffer is full",
    );

    ws.bufferedAmount = 0; // it reads again
    sink.onSegment(delta());
    assert.equal(
      live.stats.segmentsDropped,
      3,
      "a delta fragment after a gap is useless",
    );
    sink.onSegment(key());
    sink.onSegment(delta());
    assert.equal(live.stats.segmentsSent, 4);
    assert.equal(ws.binary.length, 5, "init + 4 segments");
    assert.equal(ws.binary.length - 1, live.stats.segmentsSent);
  }));

Deno.test("LiveSession answers ping, refuses bad frames and maps turns", () =>
  withLiveSession((live, ws) => {
    const events = live.engineEvents(() => {});
    events.onResponseStart("r1");
    events.onTranscript({ role: "agent", text: "hi", final: true });
    events.onResponseEnd("r1");
    events.onTranscript({ role: "user", text: "hey", final: true });
    events.onTranscript({ role: "agent", text: "late", final: true });
    ws.onmessage!(
      new MessageEvent("message", { data: JSON.stringify({ type: "ping" }) }),
    );
    ws.onmessage!(new MessageEvent("message", { data: "[1,2]" }));
    assert.deepEqual(ws.json, [
      { type: "session.state", status: "active" },
      { type: "turn.start", turn_id: "turn_1", role: "avatar" },
      {
        type: "transcript",
        turn_id: "turn_1",
        role: "avatar",
        text: "hi",
        final: true,
      },
      { type: "turn.end", turn_id: "turn_1" },
      { type: "turn.start", turn_id: "turn_2", role: "user" },
      {
        type: "transcript",
        turn_id: "turn_2",
        role: "user",
        text: "hey",
        final: true,
      },
      { type: "turn.end", turn_id: "turn_2" },
      { type: "turn.start", turn_id: "turn_3", role: "avatar" },
      {
        type: "transcript",
        turn_id: "turn_3",
        role: "avatar",
        text: "late",
        final: true,
      },
      { type: "turn.end", turn_id: "turn_3" },
      { type: "pong" },
      { type: "error", code: "invalid_message", fatal: false },
    ]);
  }));

Deno.test("LiveSession restarts a failed stream on the same socket, then gives up", () =>
  withLiveSession((live, ws) => {
    const render = capturingRender();
    let attaches = 0;
    const attach = render.attach;
    render.attach = (sink) => {
      attaches++;
      attach(sink);
    };
    const failures: string[] = [];
    live.onFailed = (why, _source, reason) =>
      failures.push(`${reason}: ${why}`);
    live.startRendering(render);
    const mime = 'video/mp4; codecs="avc1.42c01e, mp4a.40.2"';
    render.sink().onInit(mime, new Uint8Array([1]));
    render.sink().onSegment(key());

    render.sink().onError(new Error("encoder fell behind"));
    assert.equal(attaches, 2, "a fresh stream is attached");
    render.sink().onSegment(key());
    assert.equal(
      live.stats.segmentsSent,
      1,
      "nothing is sent before the new init",
    );
    render.sink().onInit(mime, new Uint8Array([2]));
    render.sink().onSegment(key());
    assert.equal(live.stats.segmentsSent, 2);
    const texts = ws.json;
    assert.equal(texts.filter((m) => m.type === "media.init").length, 2);
    assert.ok(
      texts.some((m) =>
        m.type === "error" && m.code === "avatar_render_failed"
      ),
    );

    for (let i = 0; i < 3; i++) render.sink().onError(new Error("again"));
    assert.deepEqual(failures, [
      "render_failed: the renderer failed repeatedly",
    ]);
    assert.equal(attaches, 4, "no restart past the limit");
  }));

Deno.test("LiveSession ends the turn of a response that never ended when the next starts", () =>
  withLiveSession((live, ws) => {
    const events = live.engineEvents(() => {});
    const json = () => ws.json.filter((m) => m.type !== "session.state");
    events.onResponseStart("r1");
    events.onResponseStart("r2");
    events.onTranscript({ role: "agent", text: "two", final: true });
    assert.deepEqual(json(), [
      { type: "turn.start", turn_id: "turn_1", role: "avatar" },
      { type: "turn.end", turn_id: "turn_1" },
      { type: "turn.start", turn_id: "turn_2", role: "avatar" },
      {
        type: "transcript",
        turn_id: "turn_2",
        role: "avatar",
        text: "two",
        final: true,
      },
    ]);
    events.onResponseEnd("r1"); // late: its turn already ended
    assert.equal(json().length, 4);

    // An engine that never ends its responses leaves one open turn, not thousands.
    for (let i = 3; i <= 2000; i++) events.onResponseStart(`r${i}`);
    const msgs = json();
    const starts = msgs.filter((m) => m.type === "turn.start").length;
    const ends = msgs.filter((m) => m.type === "turn.end").length;
    assert.equal(starts, 2000);
    assert.equal(ends, 1999);
    for (let i = 1; i < 2000; i++) events.onResponseEnd(`r${i}`);
    assert.equal(json().length, msgs.length, "old responses end nothing");
    events.onResponseEnd("r2000");
    assert.deepEqual(json().at(-1), { type: "turn.end", turn_id: "turn_2000" });
  }));

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
