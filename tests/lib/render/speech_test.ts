import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../lib/render/builtin.ts";
import type { SpeechEvent } from "../../../lib/ports/render.ts";
import { SpeechTimeline } from "../../../lib/render/speech.ts";
import { AudioQueue } from "../../../lib/render/voice.ts";
import { mouthRegion } from "../../../lib/render/draw.ts";
import { audibleSpans, decodeAudio, decodeLuma } from "./_audible.ts";
import {
  assertNoEncoders,
  ManualClock,
  RecordingSink,
  tone,
} from "./_helpers.ts";

const OPEN = { sessionId: "session:test", avatarId: "ava", bgId: "studio" };
/** One video frame at 25 fps. */
const FRAME_MS = 40;

/** A recording sink that also records speech events, with the segments sent before each. */
class SpeechSink extends RecordingSink {
  events: Array<SpeechEvent & { afterSegments: number }> = [];
  onSpeech(e: SpeechEvent): void {
    this.events.push({ ...e, afterSegments: this.segments.length });
  }
}

/** A built-in renderer on a hand-driven clock, attached to a sink recording speech. */
async function speakingRenderer() {
  const clock = new ManualClock();
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose: [] }, {
    width: 128,
    height: 128,
    clock,
  });
  const session = await backend.open(OPEN);
  const sink = new SpeechSink();
  const events = sink.events;
  session.attach(sink);
  /** Advances frame by frame, letting the encoder's output arrive as it goes. */
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += FRAME_MS) {
      clock.advance(FRAME_MS);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return { session, sink, events, run };
}

/** Asserts `a` and `b` (ms) are within one video frame. */
function withinFrame(a: number, b: number, what: string): void {
  assert.ok(Math.abs(a - b) <= FRAME_MS, `${what}: ${a} vs ${b}`);
}

Deno.test("builtin renderer: speech events match the audible audio of the fMP4 stream", async () => {
  const { session, sink, events, run } = await speakingRenderer();
  await run(400);
  session.pushAudio(tone(0.6, 24000), 24000, "turn_1");
  await run(1000);
  // A second turn, cut while it plays: its queued rest is dropped at once.
  session.pushAudio(tone(1.0, 24000), 24000, "turn_2");
  await run(300);
  const cut = await session.interrupt();
  assert.equal(cut?.tag, "turn_2");
  assert.equal(cut?.wasSpeaking, true);
  assert.equal(session.stats().queuedAudioSamples, 0);
  await run(800);
  await sink.until(() => sink.segments.length >= 55);
  await session.stop({ graceful: true, timeoutMs: 5000 });
  assertNoEncoders();

  const spans = audibleSpans(
    await decodeAudio(sink.inits[0].init, sink.segments),
  );
  assert.equal(spans.length, 2, JSON.stringify(spans));
  const byTurn = (tag: string, speaking: boolean) =>
    events.find((e) => e.tag === tag && e.speaking === speaking)!;
  withinFrame(byTurn("turn_1", true).mediaTimeMs, spans[0][0], "turn 1 starts");
  withinFrame(byTurn("turn_1", false).mediaTimeMs, spans[0][1], "turn 1 stops");
  withinFrame(byTurn("turn_2", true).mediaTimeMs, spans[1][0], "turn 2 starts");
  const stop = byTurn("turn_2", false);
  withinFrame(stop.mediaTimeMs, spans[1][1], "turn 2 is cut");
  // played_ms: what of turn 2 went into the stream, within a frame of what is audible.
  assert.deepEqual(stop.cut, { playedMs: cut!.playedMs });
  withinFrame(cut!.playedMs, spans[1][1] - spans[1][0], "played_ms");
  // Every event comes after the segment holding its time: nothing audible of turn 2
  // is in the segments after the cut's event (the stream is silent from there).
  const afterCut = await decodeAudio(
    sink.inits[0].init,
    sink.segments,
  );
  const tail = afterCut.subarray(
    Math.round(stop.mediaTimeMs * 48) + 48 * FRAME_MS,
  );
  assert.equal(audibleSpans(tail).length, 0, "no agent audio after the cut");
  const segMs = (n: number) => n * FRAME_MS;
  for (const e of events) {
    assert.ok(
      segMs(e.afterSegments) >= e.mediaTimeMs,
      `event at ${e.mediaTimeMs} ms sent after ${e.afterSegments} segments`,
    );
  }
});

/**
 * How open the mouth looks in a decoded 128×128 frame: the pixels of the mouth region
 * as dark as the mouth's inside (the head moves on the session's own seed, so the
 * region, which holds the mouth in every pose, is read rather than a reference drawing).
 */
function mouthScore(frame: Uint8Array): number {
  const r = mouthRegion(128, 128);
  let n = 0;
  for (let y = r.y; y < r.y + r.h; y++) {
    for (let x = r.x; x < r.x + r.w; x++) if (frame[y * 128 + x] < 52) n++;
  }
  return n;
}

Deno.test("builtin renderer: a cut closes the mouth on the next frame", async () => {
  const { session, sink, events, run } = await speakingRenderer();
  await run(400);
  session.pushAudio(tone(1.0, 48000), 48000, "turn_1");
  await run(600);
  await session.interrupt();
  await run(600);
  await sink.until(() => sink.segments.length >= 30);
  await session.stop({ graceful: true, timeoutMs: 5000 });
  assertNoEncoders();
  const cutAt = events.find((e) => e.cut)!.mediaTimeMs / FRAME_MS;
  const scores = (await decodeLuma(sink.inits[0].init, sink.segments, 128, 128))
    .map(mouthScore);
  const closed = Math.max(...scores.slice(2, 9));
  const speaking = Math.min(...scores.slice(cutAt - 5, cutAt));
  assert.ok(speaking >= closed + 5, `open ${speaking} vs closed ${closed}`);
  // Without the reset the mouth takes several frames to close from open.
  for (let n = cutAt + 1; n < cutAt + 8; n++) {
    assert.ok(
      scores[n] <= closed,
      `frame ${n - cutAt} after the cut: ${scores[n]} (closed ${closed})`,
    );
  }
});

Deno.test("builtin renderer: a takeover mid-speech hears of the speech on its own timeline", async () => {
  const { session, sink, events, run } = await speakingRenderer();
  await run(400);
  session.pushAudio(tone(1.0, 48000), 48000, "turn_1");
  await run(400);
  await sink.until(() => events.some((e) => e.speaking));
  const second = new SpeechSink();
  session.attach(second);
  await run(1000);
  await second.until(() => second.events.some((e) => !e.speaking));
  await session.stop({ graceful: true, timeoutMs: 5000 });
  assertNoEncoders();
  const [on, off] = second.events;
  assert.deepEqual([on.tag, on.speaking, off.tag, off.speaking], [
    "turn_1",
    true,
    "turn_1",
    false,
  ]);
  // The new viewer's timeline starts at its first keyframe: the speech under way is
  // reported from its start (clamped to 0), and it stops where its audio stops.
  const spans = audibleSpans(
    await decodeAudio(second.inits[0].init, second.segments),
  );
  assert.equal(spans.length, 1, JSON.stringify(spans));
  withinFrame(on.mediaTimeMs, Math.max(0, spans[0][0]), "speech under way");
  withinFrame(off.mediaTimeMs, spans[0][1], "speech stops");
});

Deno.test("builtin renderer: a tagged cut drops only that turn's queued audio", async () => {
  const { session, sink, events, run } = await speakingRenderer();
  session.pushAudio(tone(0.4, 48000), 48000, "turn_1");
  session.pushAudio(tone(0.4, 48000, 440), 48000, "turn_2");
  await run(200);
  // turn_2 is queued behind turn_1 and cancelled before it plays.
  const cut = await session.interrupt({ tag: "turn_2" });
  assert.deepEqual(cut, { tag: "turn_2", playedMs: 0, wasSpeaking: false });
  assert.equal(session.stats().queuedAudioSamples, 0.2 * 48000);
  assert.equal(await session.interrupt({ tag: "turn_9" }), null);
  await run(800);
  await sink.until(() => events.some((e) => e.tag === "turn_1" && !e.speaking));
  await session.stop({ graceful: false, timeoutMs: 0 });
  assert.deepEqual(
    events.map((e) => [e.tag, e.speaking, e.mediaTimeMs]),
    [["turn_2", false, 200], ["turn_1", true, 0], ["turn_1", false, 400]].sort(
      (a, b) => (a[2] as number) - (b[2] as number),
    ),
  );
  assertNoEncoders();
});

Deno.test("SpeechTimeline follows tags through the queue", async (t) => {
  await t.step("quiet audio of a turn is not speech", () => {
    const s = new SpeechTimeline();
    const q = new AudioQueue(48000);
    s.pushed("a", 3840);
    q.push(new Int16Array(3840));
    s.pushed("b", 960);
    q.push(tone(0.02, 48000));
    // a's 3840 samples are silent: two frames, then b speaks at 80 ms.
    for (let pos = 0; pos < 3 * 1920; pos += 1920) {
      const frame = q.take(1920);
      s.took(frame.samples, frame.real, pos);
      assert.equal(s.hasPending, pos >= 3840);
    }
    assert.deepEqual(s.delivered(3840), []);
    assert.deepEqual(s.delivered(10_000), [
      { speaking: true, tag: "b", mediaTimeMs: 80 },
    ]);
  });
  await t.step(
    "without a stream nothing is pending and nothing counts as played",
    () => {
      const s = new SpeechTimeline();
      const q = new AudioQueue();
      s.pushed("a", 4800);
      q.push(tone(0.1, 48000));
      const f = q.take(1920);
      s.took(f.samples, f.real, null);
      assert.equal(s.hasPending, false);
      assert.deepEqual(s.cut(q, {}, null), {
        tag: "a",
        playedMs: 0,
        wasSpeaking: false,
      });
      assert.equal(q.length, 0);
      assert.equal(s.cut(q, {}, null), null);
    },
  );
});

/** Takes frames of 1920 samples from `q` into `s` at stream positions from `from`. */
function runFrames(
  s: SpeechTimeline,
  q: AudioQueue,
  from: number,
  frames: number,
): number {
  let pos = from;
  for (let i = 0; i < frames; i++, pos += 1920) {
    const f = q.take(1920);
    s.took(f.samples, f.real, pos);
  }
  return pos;
}

Deno.test("SpeechTimeline: ends and caption marks", async (t) => {
  await t.step(
    "an ended tag stops and reports ended once all its audio was taken",
    () => {
      const s = new SpeechTimeline();
      const q = new AudioQueue();
      s.pushed("a", 9600);
      q.push(tone(0.2, 48000));
      assert.equal(s.end("a", 0), false);
      const pos = runFrames(s, q, 0, 6);
      assert.deepEqual(s.delivered(pos), [
        { speaking: true, tag: "a", mediaTimeMs: 0 },
        { speaking: false, tag: "a", mediaTimeMs: 200 },
        { speaking: false, tag: "a", mediaTimeMs: 200, ended: true },
      ]);
      // Nothing of it left: a second end has nothing to wait for.
      assert.equal(s.end("a", pos), true);
    },
  );
  await t.step(
    "marks land after the audio before them; a retro mark where its audio went",
    () => {
      const s = new SpeechTimeline();
      const q = new AudioQueue();
      s.mark("a", 1); // text before any audio
      s.pushed("a", 4800);
      q.push(tone(0.1, 48000));
      s.mark("a", 2); // text after 100 ms of audio
      s.pushed("a", 4800);
      q.push(tone(0.1, 48000));
      s.mark("a", 3, 2400); // placed by the adapter at 50 ms, into queued audio
      const pos = runFrames(s, q, 1920, 6);
      s.mark("a", 4, 4800); // after its audio was taken: where it went
      const events = s.delivered(pos + 1).filter((e) => e.mark !== undefined)
        .map((e) => [e.mark, e.mediaTimeMs]);
      assert.deepEqual(events, [[1, 40], [3, 90], [2, 140], [4, 140]]);
    },
  );
  await t.step(
    "a cut drops the marks of its tag not yet reached",
    () => {
      const s = new SpeechTimeline();
      const q = new AudioQueue();
      s.pushed("a", 48000);
      q.push(tone(1, 48000));
      s.mark("a", 1);
      const pos = runFrames(s, q, 0, 3);
      s.cut(q, { tag: "a" }, pos);
      runFrames(s, q, pos, 3);
      const delivered = s.delivered(1e9);
      assert.equal(delivered.some((e) => e.mark !== undefined), false);
      assert.deepEqual(delivered.at(-1)?.cut, { playedMs: 120 });
    },
  );
});
