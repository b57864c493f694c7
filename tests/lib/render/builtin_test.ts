/**
 * The built-in renderer's stream: planTicks() pacing, the init and contiguous
 * fragments from 0, takeover attaches on a keyframe, audio latency, the audio queue's
 * bound, interrupt and catch-up, a real-time stream MediaSource can play, and the frame
 * size the avatar id picks.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import {
  createBuiltinRenderer,
  planTicks,
  realClock,
} from "../../../lib/render/builtin.ts";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import { RenderStartError } from "../../../lib/ports/render.ts";
import { MAX_AGENT_AUDIO_AHEAD_MS } from "../../../lib/render/voice.ts";
import {
  assertNoEncoders,
  pidExists,
  RecordingSink,
  timelines,
  tone,
  videoSize,
} from "./_helpers.ts";
import {
  attached,
  noEncoders,
  onlyEncoder,
  OPEN,
  renderer,
  run,
  videoEnd,
} from "./_builtin.ts";

Deno.test("planTicks()", async (t) => {
  await t.step("produces one frame a tick when on time", () => {
    assert.deepEqual(planTicks(0, 0, 25, 25), { produce: 1, rebase: 0 });
    assert.deepEqual(planTicks(40, 1, 25, 25), { produce: 1, rebase: 0 });
    assert.deepEqual(planTicks(39, 1, 25, 25), { produce: 0, rebase: 0 });
  });
  await t.step("catches up when late, then rebases past the bound", () => {
    assert.deepEqual(planTicks(200, 1, 25, 25), { produce: 5, rebase: 0 });
    assert.deepEqual(planTicks(5000, 1, 25, 25), { produce: 25, rebase: 100 });
  });
});

Deno.test("builtin renderer streams", async (t) => {
  await t.step("open() refuses an unknown avatar or background", async () => {
    const { backend } = renderer();
    for (const bad of [{ avatarId: "nobody" }, { bgId: "moon" }]) {
      await assert.rejects(
        backend.open({ ...OPEN, ...bad }),
        (e: unknown) =>
          e instanceof RenderStartError && e.kind === "misconfigured",
      );
    }
  });

  await t.step(
    "attach() sends the init segment, then contiguous moof+mdat from 0",
    async () => {
      const { clock, session, sink } = await attached();
      run(clock, 2000);
      await sink.until(() => sink.segments.length >= 40);
      assert.equal(sink.inits.length, 1);
      assert.match(
        sink.inits[0].mime,
        /^video\/mp4; codecs="avc1\.42[0-9a-f]{4}, mp4a\.40\.2"$/,
      );
      assert.equal(parseInit(sink.inits[0].init).hasMvex, true);
      const lines = timelines(sink.inits[0].init, sink.segments);
      for (const [, list] of lines) {
        assert.equal(list[0].start, 0);
        for (let i = 1; i < list.length; i++) {
          assert.equal(list[i].start, list[i - 1].start + list[i - 1].duration);
        }
      }
      assert.equal(lines.get(1)![0].sync, true);
      assert.equal(session.segmentsRendered, sink.segments.length);
      const r = await session.stop({ graceful: true, timeoutMs: 5000 });
      assert.equal(r.clean, true);
      // Paced by the injected clock: 2 s of clock time after attach is 50 frames, all
      // of them out (512 ticks a frame at ffmpeg's 12800 Hz video timescale).
      assert.equal(videoEnd(sink), 50 * 512);
      noEncoders();
    },
  );

  await t.step(
    "a takeover attach reuses the encoder: new init, the GOP at once, timestamps from 0 on a keyframe",
    async () => {
      const { backend, clock } = renderer();
      const session = await backend.open(OPEN);
      const first = new RecordingSink();
      session.attach(first);
      run(clock, 600);
      await first.until(() => first.segments.length >= 8);
      const firstPid = onlyEncoder();
      const second = new RecordingSink();
      session.attach(second);
      // At once, before any new frame: the init and the fragments since the last
      // keyframe (frame 0 of 25; 8 or more fragments out so far).
      assert.equal(second.inits.length, 1);
      assert.ok(second.segments.length >= 1, "the current GOP at once");
      assert.equal(second.inits[0].mime, first.inits[0].mime);
      const firstCount = first.segments.length;
      run(clock, 1200);
      await second.until(() => second.segments.length >= 30);
      assert.equal(
        first.segments.length,
        firstCount,
        "the old sink gets nothing",
      );
      assert.deepEqual(first.errors, []);
      assert.deepEqual(second.errors, []);
      const lines = timelines(second.inits[0].init, second.segments);
      for (const [, list] of lines) {
        assert.ok(list[0].start < 1024, `starts near 0: ${list[0].start}`);
        for (let i = 1; i < list.length; i++) {
          assert.equal(list[i].start, list[i - 1].start + list[i - 1].duration);
        }
      }
      assert.equal(lines.get(1)![0].start, 0);
      assert.equal(lines.get(1)![0].sync, true);
      // One encoder for the session, still the first one.
      assert.equal(onlyEncoder(), firstPid);
      assert.equal(pidExists(firstPid), true);
      await session.stop({ graceful: false, timeoutMs: 0 });
      noEncoders();
    },
  );

  await t.step(
    "a takeover past the first GOP starts on the last keyframe, rebased to 0",
    async () => {
      const { backend, clock } = renderer();
      const session = await backend.open(OPEN);
      const first = new RecordingSink();
      session.attach(first);
      run(clock, 1600); // 40 frames: the last keyframe is frame 25
      await first.until(() => first.segments.length >= 30);
      const pid = onlyEncoder();
      const later = new RecordingSink();
      session.attach(later);
      run(clock, 400);
      await later.until(() => later.segments.length >= 15);
      const lines = timelines(later.inits[0].init, later.segments);
      assert.equal(lines.get(1)![0].start, 0);
      assert.equal(lines.get(1)![0].sync, true);
      const audio = [...lines.keys()].find((k) => k !== 1)!;
      assert.ok(lines.get(audio)![0].start < 2048, "audio starts near 0 too");
      assert.equal(onlyEncoder(), pid);
      await session.stop({ graceful: false, timeoutMs: 0 });
      noEncoders();
    },
  );

  await t.step(
    "pushed audio is measured until the segment carrying it",
    async () => {
      const { clock, session, sink } = await attached();
      run(clock, 400);
      session.pushAudio(tone(0.2, 24000), 24000);
      run(clock, 600);
      await sink.until(() => session.stats().audioLatencyMs.length === 1);
      await session.stop({ graceful: false, timeoutMs: 0 });
      noEncoders();
    },
  );
});

Deno.test("builtin renderer audio queue", async (t) => {
  await t.step(
    "holds a 5-s answer pushed at once whole, and refuses a push past its bound",
    async () => {
      const { backend } = renderer();
      const session = await backend.open(OPEN);
      assert.equal(session.pushAudio(new Int16Array(5 * 48000), 48000), true);
      assert.equal(session.stats().droppedAudioSamples, 0);
      assert.equal(session.stats().queuedAudioSamples, 5 * 48000);
      const rest = MAX_AGENT_AUDIO_AHEAD_MS * 48 - 5 * 48000;
      assert.equal(session.pushAudio(new Int16Array(rest), 48000), true);
      assert.equal(session.pushAudio(new Int16Array(480), 48000), false);
      assert.equal(session.stats().droppedAudioSamples, 480);
      assert.equal(
        session.stats().queuedAudioSamples,
        MAX_AGENT_AUDIO_AHEAD_MS * 48,
      );
      await session.stop({ graceful: false, timeoutMs: 0 });
    },
  );

  await t.step(
    "is consumed at real time and emptied by interrupt()",
    async () => {
      const { backend, clock } = renderer();
      const session = await backend.open(OPEN);
      session.pushAudio(tone(1, 48000), 48000);
      run(clock, 400);
      // 10 frames since the push (t = 40 … 400 ms), 1920 samples each.
      assert.equal(session.stats().queuedAudioSamples, 48000 - 10 * 1920);
      session.interrupt();
      assert.equal(session.stats().queuedAudioSamples, 0);
      await session.stop({ graceful: false, timeoutMs: 0 });
    },
  );

  await t.step(
    "catches up at most maxCatchUpFrames at once, skipping draws",
    async () => {
      const { clock, session, sink } = await attached({ maxCatchUpFrames: 10 });
      clock.jump(2000);
      // Of the 10 frames produced at once only the last is drawn, and the first,
      // because a fresh stream has no frame yet to repeat.
      assert.equal(session.stats().skippedDraws, 8);
      await session.stop({ graceful: true, timeoutMs: 5000 });
      // 10 frames caught up, the rest of the stall forgiven: contiguous, no holes.
      assert.equal(videoEnd(sink), 10 * 512);
      noEncoders();
    },
  );
});

Deno.test("builtin renderer in real time delivers a stream MediaSource can play", async () => {
  const onClose: Array<() => void | Promise<void>> = [];
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    clock: realClock,
  });
  const session = await backend.open(OPEN);
  const sink = new RecordingSink();
  session.attach(sink);
  await sink.until(() => sink.segments.length >= 5);
  session.pushAudio(tone(0.3, 24000), 24000);
  await sink.until(() => sink.segments.length >= 25);
  await session.stop({ graceful: true, timeoutMs: 5000 });
  const info = parseInit(sink.inits[0].init);
  const defaults = new Map(
    info.tracks.map((x) => [x.trackId, x.defaultSampleFlags]),
  );
  const first = parseFragment(sink.segments[0], defaults);
  assert.equal(
    first.tracks.find((x) => x.trackId === 1)!.firstSampleSync,
    true,
  );
  assert.equal(session.stats().audioLatencyMs.length, 1);
  noEncoders();
});

Deno.test("the avatar id picks the frame size: -hd entries at 512×512", async () => {
  const { backend, clock } = renderer({ width: undefined, height: undefined });
  const sizes: string[] = [];
  for (const avatarId of ["ava", "ava-hd", "mira-hd"]) {
    const session = await backend.open({ ...OPEN, avatarId });
    const sink = new RecordingSink();
    session.attach(sink);
    run(clock, 200);
    await sink.until(() => sink.inits.length === 1);
    sizes.push(videoSize(sink.inits[0].init));
    await session.stop({ graceful: false, timeoutMs: 0 });
  }
  assert.deepEqual(sizes, ["384x384", "512x512", "512x512"]);
  assertNoEncoders();
});
