/**
 * The media socket as its session ends or fails: the end call's real teardown, an engine
 * that refuses, errors fatally or never answers, an ended session, a service shutdown.
 */
import assert from "node:assert/strict";
import {
  Browser,
  connectActive,
  createSession,
  ENGINE_KEY,
  liveStack,
  noFfmpegLeft,
  statusOf,
} from "../../../../lib/media/_live.ts";
import { end, live } from "./_helpers.ts";

Deno.test("end drives the real teardown: graceful, stubborn engine, force", async (t) => {
  await t.step(
    "graceful end → ended, session.ended, close 1000, chunks counted",
    async () => {
      await live(async (s) => {
        const c = await createSession(s);
        const b = await connectActive(s, c.session_id, c.client_token, 2);
        const r = await end(s, c.session_id);
        assert.equal(r.status, 200);
        assert.equal(r.body.status, "ended");
        assert.equal("warning" in r.body, false);
        assert.ok(r.body.chunks_rendered >= 1);
        assert.ok(r.body.duration_s >= 0);
        await b.message(
          (m) => m.type === "session.ended" && m.status === "ended",
          "session.ended",
        );
        assert.equal(await b.closed(), 1000);
        const peer = await s.engine.peer();
        assert.ok(peer.json.some((m) => m.type === "session.end"));
        assert.equal(s.t.app.deps.vault.has(c.session_id), false);
        // After a whole live session, no secret is in KV or in any log line.
        const secrets = [
          ENGINE_KEY,
          c.client_token,
          c.stream_metadata.session_token,
        ];
        for await (const e of s.t.app.deps.kv.list({ prefix: [] })) {
          const text = JSON.stringify(
            e,
            (_k, v) => typeof v === "bigint" ? String(v) : v,
          );
          for (const secret of secrets) {
            assert.ok(!text.includes(secret), `KV ${e.key.join("/")}`);
          }
        }
        for (const line of s.t.log.lines) {
          for (const secret of secrets) assert.ok(!line.includes(secret), line);
        }
      });
    },
  );

  await t.step("stubborn engine → ended_with_warnings naming it", async () => {
    await live(
      async (s) => {
        const c = await createSession(s);
        const b = await connectActive(s, c.session_id, c.client_token, 2);
        const r = await end(s, c.session_id);
        assert.equal(r.status, 200);
        assert.equal(r.body.status, "ended_with_warnings");
        assert.match(r.body.warning, /conversation engine did not close/);
        await b.message(
          (m) =>
            m.type === "session.ended" && m.status === "ended_with_warnings",
          "ended",
        );
      },
      { env: { END_CLEANUP_TIMEOUT_MS: "600" }, stubborn: true },
    );
  });

  await t.step(
    "force=true drops at once, without session.end to the engine",
    async () => {
      await live(
        async (s) => {
          const c = await createSession(s);
          const b = await connectActive(s, c.session_id, c.client_token, 2);
          const r = await end(s, c.session_id, true);
          assert.equal(r.status, 200);
          assert.equal(r.body.status, "ended");
          const peer = await s.engine.peer();
          assert.ok(!peer.json.some((m) => m.type === "session.end"));
          assert.equal(await b.closed(), 1000);
          const again = await end(s, c.session_id);
          assert.equal(again.status, 409);
          assert.equal(again.body.code, "AVTR_SESSION_ENDED");
        },
        { stubborn: true },
      );
    },
  );
});

/** Waits for the socket to open and get the fatal invalid_session error. */
async function refusedInvalidSession(b: Browser): Promise<void> {
  await b.opened;
  const err = await b.message((m) => m.type === "error", "fatal error");
  assert.deepEqual(err, {
    type: "error",
    code: "invalid_session",
    fatal: true,
  });
}

Deno.test("an engine that refuses the session fails it; the socket gets invalid_session", async () => {
  await live(async (s) => {
    const c = await createSession(s, "wrong-engine-key");
    const b = Browser.connect(s, c.session_id, c.client_token);
    await refusedInvalidSession(b);
    await b.closed();
    assert.equal((await statusOf(s, c.session_id)).status, "failed");
    assert.equal(s.t.app.deps.vault.has(c.session_id), false);
    const r = await end(s, c.session_id);
    assert.equal(r.status, 409);
    assert.equal(r.body.code, "AVTR_SESSION_CONFLICT");
  });
});

Deno.test("a fatal engine error ends an active session with a warning", async () => {
  await live(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    b.send({ type: "text", text: "fatal" });
    const ended = await b.message(
      (m) => m.type === "session.ended",
      "session.ended",
    );
    assert.equal(ended.status, "ended_with_warnings");
    const st = await statusOf(s, c.session_id);
    assert.equal(st.status, "ended_with_warnings");
  });
});

Deno.test("an ended session's socket opens, gets the fatal invalid_session and how it ended, and closes", async () => {
  await live(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    await end(s, c.session_id, true);
    await b.closed();
    const late = Browser.connect(s, c.session_id, c.client_token);
    await refusedInvalidSession(late);
    // ...and how it ended, as the session's own socket was told: a page that
    // redialled just as it ended learns why (sfu_lost_test's page, now and then).
    const told = b.json.find((m) => m.type === "session.ended");
    const ended = await late.message(
      (m) => m.type === "session.ended",
      "session.ended",
    );
    assert.deepEqual(ended, told);
    assert.equal(await late.closed(), 4001);
  });
});

Deno.test("an engine that never answers fails the session at START_TIMEOUT_MS (the process lives on)", async () => {
  await live(async (s) => {
    s.engine.server.freeze(); // accepts the connection, never answers the upgrade
    const c = await createSession(s);
    const b = Browser.connect(s, c.session_id, c.client_token);
    await refusedInvalidSession(b);
    assert.equal((await statusOf(s, c.session_id)).status, "failed");
    // Still serving: a new session can be created after the timeout fired.
    await createSession(s);
  }, { env: { START_TIMEOUT_MS: "400" } });
});

Deno.test("a service shutdown closes live sockets with 1001 and no session.ended", async () => {
  const s = await liveStack();
  let b: Browser | undefined;
  try {
    const c = await createSession(s);
    b = await connectActive(s, c.session_id, c.client_token);
    await s.t.close();
    assert.equal(await b.closed(), 1001);
    assert.equal(b.json.some((m) => m.type === "session.ended"), false);
  } finally {
    b?.close();
    await s.server.shutdown();
    await s.engine.close();
  }
  await noFfmpegLeft();
});
