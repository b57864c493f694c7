import assert from "node:assert/strict";
import { TestClock } from "../../_helpers.ts";
import { createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { INSTANCE_LOST_WARNING, reapOnce } from "../../../lib/media/reaper.ts";
import { instanceStaleMs } from "../../../lib/media/presence.ts";
import { connectActive, createSession, liveStack, statusOf } from "./_live.ts";

Deno.test("reapOnce() fails a created session with no media socket past the connect timeout", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({ SESSION_CONNECT_TIMEOUT_S: "60" }, { clock });
  try {
    const c = await createSession(s);
    clock.advance(59_000);
    assert.deepEqual(await reapOnce(s.t.app.deps), { failed: [], ended: [] });
    clock.advance(1_000);
    assert.deepEqual(await reapOnce(s.t.app.deps), {
      failed: [c.session_id],
      ended: [],
    });
    const st = await statusOf(s, c.session_id);
    assert.equal(st.status, "failed");
    assert.equal(s.t.app.deps.vault.has(c.session_id), false);
    assert.equal(s.t.app.deps.renderSlots.has(c.session_id), false);
  } finally {
    await s.close();
  }
});

Deno.test("reapOnce() ends an active session idle past SESSION_IDLE_TIMEOUT_S with a warning", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({ SESSION_IDLE_TIMEOUT_S: "30" }, { clock });
  try {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token);
    clock.advance(120_000);
    assert.deepEqual(
      (await reapOnce(s.t.app.deps)).ended,
      [],
      "attached sessions are not idle",
    );
    b.close();
    await b.closed();
    // The detach is recorded asynchronously; wait until the reaper can see it.
    for (let i = 0; i < 50; i++) {
      const p = await s.t.app.deps.kv.get<{ attached: boolean }>([
        "media_presence",
        c.session_id,
      ]);
      if (p.value && !p.value.attached) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    clock.advance(29_000);
    assert.deepEqual((await reapOnce(s.t.app.deps)).ended, []);
    clock.advance(1_000);
    assert.deepEqual((await reapOnce(s.t.app.deps)).ended, [c.session_id]);
    const st = await statusOf(s, c.session_id);
    assert.equal(st.status, "ended_with_warnings");
  } finally {
    await s.close();
  }
});

Deno.test("reapOnce() ends an active session at SESSION_MAX_DURATION_S, closing its socket", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({ SESSION_MAX_DURATION_S: "600" }, { clock });
  try {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token);
    clock.advance(600_000);
    assert.deepEqual((await reapOnce(s.t.app.deps)).ended, [c.session_id]);
    const ended = await b.message(
      (m) => m.type === "session.ended",
      "session.ended",
    );
    assert.equal(ended.status, "ended_with_warnings");
    assert.equal(await b.closed(), 1000);
    const lines = s.t.log.lines.filter((l) =>
      l.includes("maximum session duration of 600 s")
    );
    assert.ok(lines.length > 0, "the warning is logged");
  } finally {
    await s.close();
  }
});

Deno.test("reapOnce() is safe with two instances on one store: each session moves once", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({
    SESSION_CONNECT_TIMEOUT_S: "60",
    RENDER_MAX_SESSIONS: "8",
  }, { clock });
  const other = await createApp({
    deps: undefined,
    kv: s.t.app.deps.kv,
    now: clock.now,
    env: { TOKEN_SECRET: "x".repeat(40) },
  });
  try {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await createSession(s)).session_id);
    clock.advance(60_000);
    const [a, b] = await Promise.all([
      reapOnce(s.t.app.deps),
      reapOnce(other.deps),
    ]);
    assert.deepEqual([...a.failed, ...b.failed].sort(), ids.sort());
    // Sessions failed by the other instance still free the owner's credentials and slots.
    const owner = s.t.app.deps;
    for (
      let i = 0;
      i < 100 && (owner.vault.size > 0 || owner.renderSlots.inUse > 0);
      i++
    ) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(owner.vault.size, 0, "credentials zeroed on the owner");
    assert.equal(
      owner.renderSlots.inUse,
      0,
      "render slots released on the owner",
    );
  } finally {
    await other.close();
    await s.close();
  }
});

Deno.test("a session failed by another instance frees the owner's credentials and render slot", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({
    SESSION_CONNECT_TIMEOUT_S: "60",
    RENDER_MAX_SESSIONS: "8",
  }, { clock });
  const other = await createApp({
    kv: s.t.app.deps.kv,
    now: clock.now,
    log: memoryLogger(),
    env: { TOKEN_SECRET: "x".repeat(40), SESSION_CONNECT_TIMEOUT_S: "60" },
  });
  try {
    const { session_id } = await createSession(s);
    const owner = s.t.app.deps;
    assert.ok(owner.vault.has(session_id) && owner.renderSlots.has(session_id));
    clock.advance(60_000);
    assert.deepEqual((await reapOnce(other.deps)).failed, [session_id]);
    for (let i = 0; i < 100 && owner.vault.has(session_id); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(
      owner.vault.has(session_id),
      false,
      "credentials zeroed on the owner",
    );
    assert.equal(
      owner.renderSlots.has(session_id),
      false,
      "slot released on the owner",
    );
  } finally {
    await other.close();
    await s.close();
  }
});

Deno.test("reapOnce() ends the sessions of an instance that stopped heartbeating with instance_lost, without waiting for a timeout", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({ RENDER_MAX_SESSIONS: "8" }, { clock });
  const other = await createApp({
    kv: s.t.app.deps.kv,
    now: clock.now,
    log: memoryLogger(),
    env: { TOKEN_SECRET: "x".repeat(40) },
  });
  try {
    const waiting = await createSession(s);
    const live = await createSession(s);
    const b = await connectActive(s, live.session_id, live.client_token);
    const stale = instanceStaleMs(s.t.app.deps.config);
    // Just short of the staleness the holder counts as alive.
    clock.advance(stale - 1_000);
    assert.deepEqual(await reapOnce(other.deps), { failed: [], ended: [] });
    // Past it (its heartbeat timer has not fired on this clock), it counts as gone:
    // far from the connect (900 s) and idle (300 s) timeouts.
    clock.advance(1_000);
    assert.deepEqual(await reapOnce(other.deps), {
      failed: [waiting.session_id],
      ended: [live.session_id],
    });
    const failed = await statusOf(s, waiting.session_id);
    assert.equal(failed.status, "failed");
    assert.equal(failed.end_reason, "instance_lost");
    const ended = await statusOf(s, live.session_id);
    assert.equal(ended.status, "ended_with_warnings");
    assert.equal(ended.end_reason, "instance_lost");
    assert.equal(ended.warning, INSTANCE_LOST_WARNING);
    // Usage counts up to the holder's last heartbeat, not to when it was noticed.
    const beat = await other.deps.kv.get<{ heartbeat_at: number }>([
      "instances",
      s.t.app.deps.instanceId,
    ]);
    assert.equal(ended.ended_at, beat.value!.heartbeat_at);
    assert.equal(
      ended.duration_s,
      Math.max(0, beat.value!.heartbeat_at - (ended.started_at as number)) /
        1000,
    );
    assert.ok((ended.duration_s as number) < stale / 1000);
    b.close();
  } finally {
    await other.close();
    await s.close();
  }
});
