/**
 * Faults under a live session, each through its real path (docs/operations.md, "What
 * happens when"): the session's encoder killed once, and an engine that stops answering
 * (connected but silent, never completing the close handshake).
 */
import assert from "node:assert/strict";
import { MAX_STREAM_RESTARTS } from "../../../lib/media/live.ts";
import { reapOnce } from "../../../lib/media/reaper.ts";
import { TestClock } from "../../_helpers.ts";
import { signIn } from "../../routes/admin/_console.ts";
import { startReceiver } from "../webhooks/_helpers.ts";
import { expectEnded, expectSocketEnd } from "../sessions/_ended.ts";
import {
  connectActive,
  createSession,
  ffmpegChildren,
  noFfmpegLeft,
  statusOf,
  withLiveStack,
} from "./_live.ts";

Deno.test("an encoder killed under a live session: avatar_render_failed (not fatal), a new init on the same socket, media resumes, the session stays active", () =>
  withLiveStack(async (s) => {
    assert.ok(MAX_STREAM_RESTARTS >= 1);
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 3);
    const [pid, ...others] = await ffmpegChildren();
    assert.deepEqual(others, [], "one encoder for one session");
    Deno.kill(pid, "SIGKILL");
    const err = await b.message(
      (m) => m.type === "error" && m.code === "avatar_render_failed",
      "avatar_render_failed",
    );
    assert.equal(err.fatal, false);
    await b.until(
      () => b.json.filter((m) => m.type === "media.init").length === 2,
      "a second media.init",
    );
    // The restarted stream: its init, then segments from a new encoder.
    const atInit = b.binary.length;
    await b.until(() => b.binary.length >= atInit + 10, "segments again");
    const now = await ffmpegChildren();
    assert.equal(now.length, 1);
    assert.notEqual(now[0], pid);
    assert.equal(b.closeCode, null, "the socket stays open");
    assert.equal((await statusOf(s, c.session_id)).status, "active");
    b.close();
  }, { noFfmpegLeft: true }));

Deno.test("an engine that goes silent: the session stays active and streaming, turns go unanswered; max_duration ends it, the engine's close bounded by END_CLEANUP_TIMEOUT_MS", async () => {
  const rx = startReceiver();
  const clock = new TestClock(Date.now());
  try {
    await withLiveStack(async (s) => {
      const c = await signIn(s.t);
      const created = await createSession(s, undefined, {
        webhook_url: rx.url,
      });
      const id = created.session_id;
      const b = await connectActive(s, id, created.client_token, 2);
      b.send({ type: "text", text: "hang" });
      const engine = await s.engine.peer();
      await b.until(
        () => engine.json.some((m) => m.text === "hang") || undefined,
        "the engine got hang",
      );
      b.send({ type: "text", text: "hello" });
      await b.until(
        () => engine.json.some((m) => m.text === "hello") || undefined,
        "the engine got the turn",
      );
      // A second of video later (25 fragments) the stream still plays and no avatar
      // turn came: the fake answers a turn within milliseconds when it is not silent.
      const at = b.binary.length;
      await b.until(() => b.binary.length >= at + 25, "the stream plays on");
      assert.ok(
        !b.json.some((m) => m.type === "turn.start" && m.role === "avatar"),
        "no avatar turn from a silent engine",
      );
      assert.equal((await statusOf(s, id)).status, "active");

      clock.advance(600_000);
      assert.deepEqual((await reapOnce(s.t.app.deps)).ended, [id]);
      const want = {
        status: "ended_with_warnings",
        reason: "max_duration",
        fromActive: true,
      } as const;
      const st = await expectEnded(s.t, rx, c, id, want);
      assert.match(
        String(st.warning),
        /conversation engine did not close within 1 s/,
      );
      await expectSocketEnd(b, want);
      assert.ok(
        engine.json.some((m) => m.type === "session.end"),
        "the engine was asked to end",
      );
    }, {
      clock,
      noFfmpegLeft: true,
      env: { SESSION_MAX_DURATION_S: "600", END_CLEANUP_TIMEOUT_MS: "1000" },
    });
  } finally {
    await rx.close();
  }
});
