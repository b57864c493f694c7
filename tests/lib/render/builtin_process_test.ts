/**
 * The built-in renderer's encoder processes: force and graceful stops reap ffmpeg, a
 * crash reaches the sink and a re-attach (even from its onError) gets a new encoder,
 * an encoder that cannot start fails open(), onClose stops every session, and detach()
 * keeps the encoder for the next attach.
 */
import assert from "node:assert/strict";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import { RenderStartError } from "../../../lib/ports/render.ts";
import { pidExists, poll, RecordingSink } from "./_helpers.ts";
import {
  attached,
  noEncoders,
  onlyEncoder,
  OPEN,
  renderer,
  run,
  videoEnd,
} from "./_builtin.ts";

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
