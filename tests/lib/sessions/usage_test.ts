import assert from "node:assert/strict";
import { endSession, readSession, tenantUsage } from "../../../lib/sessions.ts";
import { DAY_MS, HOUR_MS } from "../../../lib/sessions/usage.ts";
import { testApp, TestClock } from "../../_helpers.ts";
import { createOk, driveTo } from "../../routes/v1/sessions/_helpers.ts";

Deno.test("tenantUsage(): concurrent ends all count, windows of 24 h and 30 days", async () => {
  const clock = new TestClock(Date.UTC(2026, 10, 22, 12, 30));
  const app = await testApp({ RENDER_MAX_SESSIONS: "64" }, { clock });
  const deps = app.app.deps;
  deps.runtime = { endLive: () => Promise.resolve({ chunksRendered: 1 }) };
  try {
    // Two days ago: in the 30-day total only.
    const old = await createOk(app);
    await driveTo(deps, old, "active");
    clock.advance(7_000);
    await endSession(deps, "admin", old, { force: false });
    clock.advance(2 * DAY_MS);

    const ids: string[] = [];
    for (let i = 0; i < 16; i++) {
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      ids.push(id);
      clock.advance(1_000 + i);
    }
    const never = await createOk(app);
    await driveTo(deps, never, "failed");
    // Every end commits against the same buckets at once: none may be lost.
    await Promise.all(
      ids.map((id) => endSession(deps, "admin", id, { force: false })),
    );
    let activeMs = 0;
    for (const id of ids) {
      activeMs += Math.round((await readSession(deps, id))!.duration_s! * 1000);
    }
    const u = await tenantUsage(deps, "admin");
    assert.deepEqual(
      {
        sessions: u.last24h.sessions,
        active: u.last24h.active_sessions,
        ms: u.last24h.active_ms,
      },
      { sessions: 17, active: 16, ms: activeMs },
    );
    assert.deepEqual(
      {
        sessions: u.last30d.sessions,
        active: u.last30d.active_sessions,
        ms: u.last30d.active_ms,
      },
      { sessions: 18, active: 17, ms: activeMs + 7_000 },
    );
    assert.equal((await tenantUsage(deps, "other")).last30d.sessions, 0);
    // 24 hours on, the recent ends leave the 24-hour window.
    clock.advance(24 * HOUR_MS);
    assert.equal((await tenantUsage(deps, "admin")).last24h.sessions, 0);
  } finally {
    await app.close();
  }
});
