/**
 * Faults under a live session, each through its real path (docs/operations.md, "What
 * happens when"): the session's encoder killed once, an engine that stops answering
 * (connected but silent, never completing the close handshake), and the KV store
 * refusing writes for 10 s.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MAX_STREAM_RESTARTS } from "../../../lib/media/restarts.ts";
import { reapOnce } from "../../../lib/media/reaper.ts";
import { TEST_ADMIN_KEY, TestClock } from "../../_helpers.ts";
import { signIn } from "../../routes/admin/_console.ts";
import { startReceiver } from "../webhooks/_helpers.ts";
import { expectEnded, expectSocketEnd } from "../sessions/_ended.ts";
import {
  connectActive,
  createSession,
  ffmpegChildren,
  statusOf,
  withLiveStack,
} from "./_live.ts";

Deno.test("an encoder killed under a live session: avatar_render_failed (not fatal), a new init on the same socket, media resumes, the session stays active", () =>
  withLiveStack(async (s) => {
    assert.ok(MAX_STREAM_RESTARTS >= 1);
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 3);
    // One encoder for one session, once any replaced one (a stream restarted by a
    // loaded machine before the test got here) has exited.
    let children = await ffmpegChildren();
    for (let i = 0; i < 100 && children.length > 1; i++) {
      await new Promise((r) => setTimeout(r, 50));
      children = await ffmpegChildren();
    }
    const [pid, ...others] = children;
    assert.deepEqual(others, [], "one encoder for one session");
    const restarts = async () =>
      Number(
        /^avatar_stream_restarts_total (\d+)$/m.exec(
          (await s.t.app.deps.metrics.expose()).body,
        )?.[1],
      );
    const before = await restarts();
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
    assert.equal(await restarts(), before + 1, "the restart in the metrics");
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

Deno.test("KV writes refused for 10 s (the store's file locked by another writer): the live session streams on, answers turns and stays active; then it ends normally", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  try {
    await withLiveStack(async (s) => {
      const c = await createSession(s);
      const b = await connectActive(s, c.session_id, c.client_token, 2);
      const db = new DatabaseSync(kvPath);
      // Taking the lock waits for a write of the service's in flight (a heartbeat):
      // without the wait, one now and then refused the lock to the test itself.
      db.exec("PRAGMA busy_timeout = 5000");
      db.exec("BEGIN EXCLUSIVE");
      let locked = true;
      const released = new Promise<void>((resolve) =>
        setTimeout(() => {
          locked = false;
          db.exec("COMMIT");
          db.close();
          resolve();
        }, 10_000)
      );
      try {
        // The store refuses every other writer meanwhile.
        const other = new DatabaseSync(kvPath);
        try {
          other.exec("PRAGMA busy_timeout = 0");
          assert.throws(
            () => other.exec("BEGIN IMMEDIATE"),
            /database is locked/,
          );
        } finally {
          other.close();
        }
        const from = b.json.length;
        const at = b.binary.length;
        b.send({ type: "text", text: "hello" });
        await b.message(
          (m) =>
            b.json.indexOf(m) >= from && m.type === "transcript" &&
            m.role === "avatar",
          "the avatar's answer while the store is locked",
        );
        await b.until(() => b.binary.length >= at + 25, "the stream plays on");
        assert.ok(locked, "answered and streamed while the store was locked");
      } finally {
        await released;
      }
      assert.equal(b.closeCode, null, "the socket stays open");
      assert.equal((await statusOf(s, c.session_id)).status, "active");
      const res = await s.t.request(`/v1/sessions/${c.session_id}/end`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).status, "ended");
    }, { env: { KV_PATH: kvPath }, noFfmpegLeft: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
