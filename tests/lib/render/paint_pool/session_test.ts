/**
 * A built-in session whose photo painter is on the paint pool: its frames wait for
 * their pictures in order, so the stream has every frame and no hole; frames produced
 * while the painter is behind show the last picture again (back-pressure); speech
 * lands where it lands with the painter in-process, however many frames wait.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../../lib/render/builtin.ts";
import { PaintPool } from "../../../../lib/render/paint_pool/pool.ts";
import { MAX_AHEAD } from "../../../../lib/render/picture_queue.ts";
import { photoPainters } from "../../../../lib/render/photo/mod.ts";
import type { SpeechEvent } from "../../../../lib/ports/render.ts";
import type { ThreadPainter } from "../../../../lib/render/painter.ts";
import { loadSet } from "../../../../scripts/lipsync/set.ts";
import { ManualClock, RecordingSink, timelines } from "../_helpers.ts";
import { AVATAR_ID, testAvatar } from "../photo/_avatar.ts";

const avatar = await testAvatar();
const [speech] = await loadSet();

class SpeechSink extends RecordingSink {
  events: SpeechEvent[] = [];
  onSpeech(e: SpeechEvent): void {
    this.events.push(e);
  }
}

/**
 * One session's 2 s (a sentence of speech pushed at 0.4 s, its caption at 0.3 s into
 * it): `atOnce` advances the clock 50 frames without waiting (the pool's pictures
 * come later), else frame by frame, each once the painter has answered.
 */
async function session(pool: PaintPool | null, atOnce: boolean) {
  const clock = new ManualClock();
  const held: { painter: ThreadPainter | null } = { painter: null };
  const frames = { painted: 0, repeated: 0 };
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose: [] }, {
    clock,
    onFrame: (painted) => painted ? frames.painted++ : frames.repeated++,
    painters: photoPainters(
      (tenant, id) =>
        Promise.resolve(tenant === "acme" && id === AVATAR_ID ? avatar : null),
      pool
        ? async (a, bg, seed) => (held.painter = await pool.open(a, bg, seed))
        : undefined,
    ),
  });
  const s = await backend.open({
    sessionId: "session:pool",
    tenantId: "acme",
    avatarId: AVATAR_ID,
    bgId: "",
  });
  const sink = new SpeechSink();
  s.attach(sink);
  for (let i = 0; i < 50; i++) {
    if (i === 10) {
      s.pushAudio(speech.pcm.subarray(0, 24000), 48000, "t1");
      s.markText("t1", 1, 300, "Hello there.");
      s.endAudio("t1");
    }
    clock.advance(40);
    while (!atOnce && (held.painter?.pending ?? 0) > 0) {
      await new Promise((r) => setTimeout(r, 2));
    }
  }
  await sink.until(() => {
    const v = sink.inits.length
      ? timelines(sink.inits[0].init, sink.segments).get(1)
      : undefined;
    const last = v?.[v.length - 1];
    return last !== undefined && last.start + last.duration >= 49 * 512;
  });
  const skipped = s.stats().skippedDraws;
  await s.stop({ graceful: true, timeoutMs: 5000 });
  const video = timelines(sink.inits[0].init, sink.segments).get(1)!;
  return { sink, video, skipped, frames };
}

Deno.test("a photo session painted on the pool streams every frame in order; frames made while the painter is behind reuse the last picture; speech lands as in-process", async () => {
  const pool = new PaintPool({ log: memoryLogger(), size: 2 });
  try {
    const local = await session(null, true);
    const paced = await session(pool, false);
    const burst = await session(pool, true);
    for (const { video } of [paced, burst]) {
      assert.equal(video[0].start, 0);
      for (let i = 1; i < video.length; i++) {
        assert.equal(
          video[i].start,
          video[i - 1].start + video[i - 1].duration,
        );
      }
      const end = video[video.length - 1];
      assert.equal(end.start + end.duration, 50 * 512);
    }
    // Paced, every frame had its picture; all at once, the painter was asked for at
    // most MAX_AHEAD before it answered, the rest showed the last again.
    assert.equal(paced.skipped, 0);
    assert.ok(burst.skipped >= 50 - 2 * MAX_AHEAD, `${burst.skipped} skipped`);
    // The frames metric hears each frame once: painted, or repeated.
    assert.deepEqual(paced.frames, { painted: 50, repeated: 0 });
    assert.equal(burst.frames.painted + burst.frames.repeated, 50);
    assert.equal(burst.frames.repeated, burst.skipped);
    const times = (s: SpeechSink) =>
      s.events.map((e) => `${e.speaking}@${e.mediaTimeMs}`).join(" ");
    assert.ok(local.sink.events.length >= 2, times(local.sink));
    assert.equal(times(paced.sink), times(local.sink));
    assert.equal(times(burst.sink), times(local.sink));
  } finally {
    pool.close();
  }
});
