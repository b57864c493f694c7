/**
 * LiveSession's downlink and turns on a fake socket: media dropped for a slow browser,
 * ping, bad frames, turn mapping, stream restarts. Hostile or faulty input:
 * live_hostile_test.ts.
 */
import assert from "node:assert/strict";
import { MAX_SOCKET_BUFFERED_BYTES } from "../../../lib/media/downlink.ts";
import { initSegment, mediaFragment } from "../../../lib/render/fmp4_writer.ts";
import { capturingRender, withLiveSession } from "./_live_session.ts";

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

const key = () =>
  segment(box("traf", tfhd(1, NON_SYNC), trun(5, SYNC_I_FRAME)));
const delta = () => segment(box("traf", tfhd(1, NON_SYNC), trun(5)));

Deno.test("LiveSession drops media for a slow browser and resumes on a keyframe", () =>
  withLiveSession(async (live, ws) => {
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
    // Counted in the metrics by why: two for the full queue, one waiting for a key.
    const text = (await live.deps.metrics.expose()).body;
    assert.match(text, /avatar_segments_dropped_total\{reason="slow"\} 2/);
    assert.match(text, /avatar_segments_dropped_total\{reason="keyframe"\} 1/);
  }));

Deno.test("LiveSession resumes a slow browser on the keyframe, not on the audio-only segment before it", () =>
  withLiveSession((live, ws) => {
    const render = capturingRender();
    live.startRendering(render);
    const sink = render.sink();
    const init = initSegment(
      {
        width: 64,
        height: 64,
        timescale: 12800,
        avcC: new Uint8Array([1, 0x42, 0xc0, 0x15]),
      },
      {
        sampleRate: 96000,
        channels: 1,
        asc: new Uint8Array([0x10, 0x08]),
        bitRate: 64000,
      },
    );
    const aac = (n: number) =>
      Array.from(
        { length: n },
        () => ({ data: new Uint8Array(8), duration: 1024 }),
      );
    let seq = 0;
    const frame = (n: number, key: boolean, audio = 4) =>
      mediaFragment({
        sequence: ++seq,
        video: { data: new Uint8Array(16), duration: 512, time: n * 512, key },
        audio: aac(audio),
        audioTime: n * 3840,
      });
    const audioOnly = () =>
      mediaFragment({
        sequence: ++seq,
        video: null,
        audio: aac(2),
        audioTime: 0,
      });
    sink.onInit('video/mp4; codecs="avc1.42c015, mp4a.40.2"', init);
    sink.onSegment(frame(0, true));
    ws.bufferedAmount = MAX_SOCKET_BUFFERED_BYTES + 1;
    sink.onSegment(frame(1, false));
    ws.bufferedAmount = 0;
    sink.onSegment(frame(2, false));
    sink.onSegment(audioOnly()); // AAC frames are all sync: still no place to resume
    sink.onSegment(frame(3, false, 0));
    assert.equal(live.stats.segmentsDropped, 4);
    sink.onSegment(frame(25, true));
    assert.equal(live.stats.segmentsSent, 2);
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

Deno.test("LiveSession tells the renderer while the user is heard speaking (the avatar listens)", () =>
  withLiveSession((live, ws) => {
    const render = capturingRender();
    live.startRendering(render);
    // 20 ms frames at the default 24 kHz: quiet room, half a second of voice, quiet.
    const frame = (amp: number, k: number) => {
      const pcm = new Int16Array(480);
      for (let i = 0; i < pcm.length; i++) {
        pcm[i] = Math.round(amp * Math.sin((k * 480 + i) * 0.13));
      }
      ws.onmessage!(new MessageEvent("message", { data: pcm.buffer }));
    };
    let k = 0;
    for (let i = 0; i < 25; i++) frame(30, k++);
    assert.deepEqual(render.listened, []);
    for (let i = 0; i < 25; i++) frame(6000, k++);
    assert.deepEqual(render.listened, [true]);
    for (let i = 0; i < 20; i++) frame(30, k++);
    assert.deepEqual(render.listened, [true], "a short pause is still speech");
    for (let i = 0; i < 40; i++) frame(30, k++);
    assert.deepEqual(render.listened, [true, false]);
  }));
