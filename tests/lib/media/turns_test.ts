/**
 * Turn-taking on a real live session (fake ECEP engine on wss, the built-in renderer,
 * a browser socket on loopback): `avatar.speaking` at the presentation times of the
 * audible audio in the fMP4 the browser received, and cuts (the browser's `interrupt`,
 * the engine's `response.cancel`) that stop the audio at once, report `played_ms` to
 * the browser and the engine, and leave no audible agent audio after `turn.interrupted`.
 */
import assert from "node:assert/strict";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import { audibleSpans, decodeAudio } from "../render/_audible.ts";
import {
  type Browser,
  connectActive,
  createSession,
  type Json,
  type LiveStack,
  withLiveStack,
} from "./_live.ts";

/** One video frame at 25 fps: the tolerance of every timing check. */
const FRAME_MS = 40;

/** Records, for each text message, how many binary frames came before it. */
function orderOf(b: Browser): Map<Json, number> {
  const order = new Map<Json, number>();
  b.ws.addEventListener("message", (e) => {
    if (typeof e.data === "string") order.set(b.json.at(-1)!, b.binary.length);
  });
  return order;
}

async function speakingSession(s: LiveStack) {
  const c = await createSession(s);
  const b = await connectActive(s, c.session_id, c.client_token, 2);
  return { b, order: orderOf(b) };
}

/** Presentation time (ms) where the audio of the first `count` binary frames ends. */
function audioEndMs(b: Browser, count: number): number {
  const init = parseInit(b.binary[0]);
  const audio = init.tracks.find((t) => t.kind === "audio")!;
  let end = 0;
  for (const seg of b.binary.slice(1, count)) {
    const t = parseFragment(seg).tracks.find((x) =>
      x.trackId === audio.trackId
    );
    if (t) end = (t.baseDecodeTime + t.duration) * 1000 / audio.timescale;
  }
  return end;
}

function near(a: number, b: number, what: string): void {
  assert.ok(Math.abs(a - b) <= FRAME_MS, `${what}: ${a} vs ${b}`);
}

const speaking = (b: Browser, on: boolean) =>
  b.message(
    (m) => m.type === "avatar.speaking" && m.speaking === on,
    `avatar.speaking ${on}`,
  );

Deno.test("avatar.speaking marks the audible avatar speech on the stream's timeline", () =>
  withLiveStack(async (s) => {
    const { b } = await speakingSession(s);
    b.send({ type: "text", text: "speak" });
    const on = await speaking(b, true);
    const off = await speaking(b, false);
    const turn = b.json.find((m) =>
      m.type === "turn.start" && m.role === "avatar"
    );
    assert.equal(on.turn_id, turn?.turn_id);
    assert.equal(off.turn_id, on.turn_id);
    // Let the stream run on so the decoded audio covers the whole turn.
    await new Promise((r) => setTimeout(r, 300));
    const spans = audibleSpans(
      await decodeAudio(b.binary[0], b.binary.slice(1)),
    );
    assert.equal(spans.length, 1, JSON.stringify(spans));
    near(on.media_time_ms as number, spans[0][0], "speech starts");
    near(off.media_time_ms as number, spans[0][1], "speech stops");
    near(spans[0][1] - spans[0][0], 600, "the whole 0.6 s was heard");
    b.close();
  }, { noFfmpegLeft: true }));

/** Asserts a cut: the browser's `turn.interrupted` and the engine's `interrupt` agree. */
async function assertCut(
  s: LiveStack,
  b: Browser,
  order: Map<Json, number>,
  responseId: string,
): Promise<void> {
  const on = await speaking(b, true);
  const cut = await b.message(
    (m) => m.type === "turn.interrupted",
    "turn.interrupted",
  );
  assert.equal(cut.turn_id, on.turn_id);
  const off = await speaking(b, false);
  assert.equal(off.turn_id, on.turn_id);
  // The engine was told which response and how much of it was streamed.
  const told = await s.engine.waiter.until(
    () => s.engine.peers[0].json.find((m) => m.type === "interrupt"),
    "interrupt at the engine",
  );
  assert.deepEqual(told, {
    type: "interrupt",
    response_id: responseId,
    played_ms: cut.played_ms,
  });
  // Keep streaming past the cut, then look at what the browser got.
  const before = order.get(cut)!;
  await b.until(() => b.binary.length >= before + 20, "segments after the cut");
  const spans = audibleSpans(await decodeAudio(b.binary[0], b.binary.slice(1)));
  assert.equal(spans.length, 1, JSON.stringify(spans));
  const [start, end] = spans[0];
  near(start, on.media_time_ms as number, "speech starts");
  near(end, off.media_time_ms as number, "speech stops at the cut");
  near(end - start, cut.played_ms as number, "played_ms is what was heard");
  assert.ok(
    end <= audioEndMs(b, before) + FRAME_MS,
    `no agent audio after turn.interrupted: audible until ${end} ms, ` +
      `segments before the message end at ${audioEndMs(b, before)} ms`,
  );
  assert.ok((cut.played_ms as number) < 1500, "the rest was dropped");
  const ends = b.json.filter((m) =>
    m.type === "turn.end" && m.turn_id === on.turn_id
  );
  assert.equal(ends.length, 1, "the cut turn ends once");
  assert.ok(b.json.indexOf(ends[0]) > b.json.indexOf(cut));
}

Deno.test("the browser's interrupt cuts the avatar at once and tells the engine what was played", () =>
  withLiveStack(async (s) => {
    const { b, order } = await speakingSession(s);
    b.send({ type: "text", text: "speak long" });
    await speaking(b, true);
    await new Promise((r) => setTimeout(r, 500));
    b.send({ type: "interrupt" });
    await assertCut(s, b, order, "resp-1");
    b.close();
  }, { noFfmpegLeft: true }));

Deno.test("the engine's response.cancel drops the rest of that response", () =>
  withLiveStack(async (s) => {
    const { b, order } = await speakingSession(s);
    b.send({ type: "text", text: "speak cancel" });
    await assertCut(s, b, order, "resp-1");
    b.close();
  }, { noFfmpegLeft: true }));

/** Waits for a `type` message matching `more`. */
const msg = (b: Browser, type: string, more: Json = {}) =>
  b.message(
    (m) =>
      m.type === type && Object.entries(more).every(([k, v]) => m[k] === v),
    `${type} ${JSON.stringify(more)}`,
  );

Deno.test("a 5-s answer sent in 0.5 s is heard whole, and its turn ends after it", () =>
  withLiveStack(async (s) => {
    const { b, order } = await speakingSession(s);
    b.send({ type: "text", text: "speak 5s" });
    const on = await speaking(b, true);
    const off = await speaking(b, false);
    const end = await msg(b, "turn.end", { turn_id: on.turn_id });
    assert.ok(b.json.indexOf(end) > b.json.indexOf(off), "turn.end after it");
    near(
      (off.media_time_ms as number) - (on.media_time_ms as number),
      5000,
      "speaking lasts the 5 s",
    );
    // turn.end comes once the segments carrying the whole answer went out.
    assert.ok(
      audioEndMs(b, order.get(end)!) >= (off.media_time_ms as number),
      "turn.end follows the media of the whole answer",
    );
    await b.until(
      () =>
        audioEndMs(b, b.binary.length) > (off.media_time_ms as number) + 300,
      "media past the answer",
    );
    const spans = audibleSpans(
      await decodeAudio(b.binary[0], b.binary.slice(1)),
    );
    assert.equal(spans.length, 1, JSON.stringify(spans));
    near(spans[0][1] - spans[0][0], 5000, "all 5 s were streamed");
    b.close();
  }, { noFfmpegLeft: true }));

Deno.test("captions carry media_time_ms: speaking start plus the audio before them", () =>
  withLiveStack(async (s) => {
    const { b } = await speakingSession(s);
    b.send({ type: "text", text: "speak 5s" });
    const on = await speaking(b, true);
    const start = on.media_time_ms as number;
    const caption = (text: string) =>
      msg(b, "transcript", { role: "avatar", text });
    const one = await caption("one");
    const two = await caption("two");
    const three = await caption("three");
    for (const c of [one, two, three]) {
      assert.equal(c.turn_id, on.turn_id);
      assert.equal(c.heard, undefined);
    }
    near(one.media_time_ms as number, start, "one: at the speech start");
    near(two.media_time_ms as number, start + 1000, "two: after 1 s of audio");
    near(three.media_time_ms as number, start + 2500, "three: after 2.5 s");
    // Exact to the sample: 100-ms frames at 16 kHz become whole 48-kHz runs.
    assert.equal((two.media_time_ms as number) - start, 1000);
    b.close();
  }));

Deno.test("a caption whose audio was cut by an interrupt arrives heard: false", () =>
  withLiveStack(async (s) => {
    const { b } = await speakingSession(s);
    b.send({ type: "text", text: "speak 5s" });
    const on = await speaking(b, true);
    await msg(b, "transcript", { role: "avatar", text: "one" });
    // The engine sends "two" 0.1 s into its burst (its audio is at 1 s): let it be
    // held before the cut, which now completes within a frame or two.
    await new Promise((r) => setTimeout(r, 200));
    b.send({ type: "interrupt" });
    const cut = await msg(b, "turn.interrupted", { turn_id: on.turn_id });
    assert.ok((cut.played_ms as number) < 1000, `played ${cut.played_ms}`);
    const two = await msg(b, "transcript", { role: "avatar", text: "two" });
    const three = await msg(b, "transcript", { role: "avatar", text: "three" });
    assert.equal(two.heard, false);
    assert.equal(three.heard, false);
    assert.equal(two.turn_id, on.turn_id);
    assert.equal(three.turn_id, on.turn_id);
    // Text held at the cut goes out before the turn's end; text still in flight after
    // the cut (three) is sent as it comes.
    const end = await msg(b, "turn.end", { turn_id: on.turn_id });
    assert.ok(b.json.indexOf(two) < b.json.indexOf(end));
    b.close();
  }));
