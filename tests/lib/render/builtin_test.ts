import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import {
  type BuiltinOptions,
  createBuiltinRenderer,
  planTicks,
  realClock,
} from "../../../lib/render/builtin.ts";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import { RenderStartError } from "../../../lib/render/port.ts";
import { MAX_AGENT_AUDIO_AHEAD_MS } from "../../../lib/render/voice.ts";
import {
  assertNoEncoders,
  ManualClock,
  notePids,
  pidExists,
  poll,
  RecordingSink,
  timelines,
  tone,
  videoSize,
} from "./_helpers.ts";

const OPEN = { sessionId: "session:test", avatarId: "ava", bgId: "studio" };

function renderer(options: BuiltinOptions = {}) {
  const onClose: Array<() => void | Promise<void>> = [];
  const clock = new ManualClock();
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    width: 128,
    height: 128,
    clock,
    ...options,
  });
  return { backend, clock, onClose };
}

/** A renderer with one session open on `OPEN`, attached to a recording sink. */
async function attached(options: BuiltinOptions = {}) {
  const { backend, clock } = renderer(options);
  const session = await backend.open(OPEN);
  const sink = new RecordingSink();
  session.attach(sink);
  return { clock, session, sink };
}

/** Where the sink's video timeline ends, in ffmpeg's 12800 Hz ticks (512 a frame). */
function videoEnd(sink: RecordingSink): number {
  const video = timelines(sink.inits[0].init, sink.segments).get(1)!;
  const last = video[video.length - 1];
  return last.start + last.duration;
}

/** Advances the clock frame by frame (40 ms steps) for `ms`. */
function run(clock: ManualClock, ms: number): void {
  for (let t = 0; t < ms; t += 40) clock.advance(40);
}

/** Pid of the only encoder running now. */
function onlyEncoder(): number {
  notePids();
  const pids = liveEncoderPids();
  assert.equal(pids.length, 1);
  return pids[0];
}

function noEncoders(): void {
  assertNoEncoders();
}

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

Deno.test("builtin renderer process hygiene", async (t) => {
  await t.step("force stop kills ffmpeg and is idempotent", async () => {
    const { clock, session, sink } = await attached();
    run(clock, 200);
    await sink.until(() => sink.inits.length === 1);
    const pid = onlyEncoder();
    const a = session.stop({ graceful: false, timeoutMs: 0 });
    const b = session.stop({ graceful: true, timeoutMs: 1000 });
    assert.equal(a, b);
    assert.deepEqual(await a, { clean: true });
    assert.equal(pidExists(pid), false);
    assert.equal(clock.pending, 0);
    noEncoders();
  });

  await t.step(
    "graceful stop flushes the last fragment and reaps ffmpeg",
    async () => {
      const { clock, session, sink } = await attached();
      run(clock, 400);
      await sink.until(() => sink.segments.length >= 1);
      const pid = onlyEncoder();
      assert.deepEqual(
        await session.stop({ graceful: true, timeoutMs: 5000 }),
        { clean: true },
      );
      assert.equal(videoEnd(sink), 10 * 512);
      assert.equal(pidExists(pid), false);
      noEncoders();
    },
  );

  await t.step(
    "an encoder crash reports to the sink; re-attach works",
    async () => {
      const { clock, session, sink } = await attached();
      run(clock, 200);
      await sink.until(() => sink.inits.length === 1);
      const pid = onlyEncoder();
      Deno.kill(pid, "SIGKILL");
      await sink.until(() => sink.errors.length === 1);
      assert.match(sink.errors[0].message, /encoder exited \(SIGKILL\)/);
      await poll(() => liveEncoderPids().length === 0);
      assert.equal(pidExists(pid), false);
      run(clock, 200);
      const again = new RecordingSink();
      session.attach(again);
      run(clock, 400);
      await again.until(() => again.segments.length >= 3);
      assert.notEqual(onlyEncoder(), pid);
      await session.stop({ graceful: false, timeoutMs: 0 });
      assert.equal(pidExists(pid), false);
      noEncoders();
    },
  );

  await t.step(
    "a sink that re-attaches from its onError (as the media plane does) gets a new encoder",
    async () => {
      const { backend, clock } = renderer();
      const session = await backend.open(OPEN);
      const again = new RecordingSink();
      const first = new RecordingSink();
      first.onError = (err: Error) => {
        RecordingSink.prototype.onError.call(first, err);
        session.attach(again);
      };
      session.attach(first);
      run(clock, 200);
      await first.until(() => first.inits.length === 1);
      const pid = onlyEncoder();
      Deno.kill(pid, "SIGKILL");
      await first.until(() => first.errors.length === 1);
      run(clock, 400);
      await again.until(() => again.segments.length >= 3);
      assert.notEqual(onlyEncoder(), pid);
      await session.stop({ graceful: false, timeoutMs: 0 });
      noEncoders();
    },
  );

  await t.step("an encoder that cannot start fails open()", async () => {
    const { backend } = renderer({ ffmpeg: "/nonexistent/ffmpeg" });
    await assert.rejects(
      backend.open(OPEN),
      (e: unknown) => e instanceof RenderStartError && e.kind === "failed",
    );
    noEncoders();
  });

  await t.step("deps.onClose stops every open session", async () => {
    const { backend, clock, onClose } = renderer();
    const s1 = await backend.open(OPEN);
    const s2 = await backend.open({ ...OPEN, avatarId: "leo", bgId: "sunset" });
    const k1 = new RecordingSink();
    const k2 = new RecordingSink();
    s1.attach(k1);
    s2.attach(k2);
    run(clock, 200);
    await k1.until(() => k1.inits.length === 1);
    await k2.until(() => k2.inits.length === 1);
    assert.equal(liveEncoderPids().length, 2);
    for (const hook of onClose) await hook();
    assert.equal(clock.pending, 0);
    noEncoders();
  });

  await t.step(
    "detach() keeps the encoder for the next attach; stop() ends it",
    async () => {
      const { clock, session, sink } = await attached();
      run(clock, 200);
      await sink.until(() => sink.inits.length === 1);
      const pid = onlyEncoder();
      session.detach();
      run(clock, 400);
      const again = new RecordingSink();
      session.attach(again);
      run(clock, 400);
      await again.until(() => again.segments.length >= 5);
      assert.equal(onlyEncoder(), pid);
      await session.stop({ graceful: true, timeoutMs: 1000 });
      assert.equal(pidExists(pid), false);
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
