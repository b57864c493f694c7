import assert from "node:assert/strict";
import { ApiError } from "../../../lib/errors.ts";
import {
  endSession,
  endWithWarning,
  readSession,
  toStatusResponse,
} from "../../../lib/sessions.ts";
import { testApp, TestClock } from "../../_helpers.ts";
import { createOk, driveTo } from "../../routes/v1/sessions/_helpers.ts";

Deno.test("endWithWarning() ends an active session as ended_with_warnings through the end path", async (t) => {
  const app = await testApp({ RENDER_MAX_SESSIONS: "8" });
  const deps = app.app.deps;
  const forces: boolean[] = [];
  deps.runtime = {
    endLive: (_id, o) => {
      forces.push(o.force);
      return Promise.resolve({ chunksRendered: 9 });
    },
  };
  try {
    await t.step("active → ended_with_warnings with the reason", async () => {
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      assert.equal(
        await endWithWarning(deps, id, "idle_timeout", "idle timeout"),
        true,
      );
      const rec = await readSession(deps, id);
      assert.equal(rec?.status, "ended_with_warnings");
      assert.equal(rec?.warning, "idle timeout");
      assert.equal(rec?.chunks_rendered, 9);
      assert.deepEqual(forces, [false]);
      assert.equal(deps.vault.has(id), false);
      assert.equal(deps.renderSlots.has(id), false);
    });
    await t.step("a cleanup warning is appended", async () => {
      deps.runtime = {
        endLive: () =>
          Promise.resolve({ warning: "renderer timed out", chunksRendered: 0 }),
      };
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      assert.equal(
        await endWithWarning(deps, id, "max_duration", "max duration", {
          force: true,
        }),
        true,
      );
      assert.equal(
        (await readSession(deps, id))?.warning,
        "max duration; renderer timed out",
      );
    });
    await t.step("not active → false, unchanged", async () => {
      for (const status of ["created", "ending", "ended", "failed"] as const) {
        const id = await createOk(app);
        await driveTo(deps, id, status);
        assert.equal(
          await endWithWarning(deps, id, "idle_timeout", "x"),
          false,
        );
        assert.equal((await readSession(deps, id))?.status, status);
      }
      assert.equal(
        await endWithWarning(deps, "session:NONE", "idle_timeout", "x"),
        false,
      );
    });
  } finally {
    await app.close();
  }
});

Deno.test("endSession() checks ownership before it moves anything", async () => {
  const app = await testApp({ RENDER_MAX_SESSIONS: "8" });
  const deps = app.app.deps;
  try {
    const id = await createOk(app);
    await driveTo(deps, id, "active");
    await assert.rejects(
      endSession(deps, "acme", id, { force: false }),
      (e) => e instanceof ApiError && e.code === "AVTR_SESSION_NOT_FOUND",
    );
    assert.equal((await readSession(deps, id))?.status, "active");
    const res = await endSession(deps, "admin", id, { force: true });
    assert.equal(res.status, "ended");
  } finally {
    await app.close();
  }
});

Deno.test("duration_s counts the seconds active, not the time spent ending", async () => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  const deps = app.app.deps;
  deps.runtime = {
    endLive: () => {
      clock.advance(3_000); // cleanup takes 3 s while the session is ending
      return Promise.resolve({ chunksRendered: 4 });
    },
  };
  try {
    const id = await createOk(app);
    await driveTo(deps, id, "active");
    clock.advance(5_000);
    await endSession(deps, "admin", id, { force: false });
    const rec = await readSession(deps, id);
    assert.equal(rec?.end_reason, "requested");
    assert.equal(rec?.duration_s, 5);
    assert.equal(rec?.ended_at, clock.now());
    assert.deepEqual(
      toStatusResponse(rec!),
      {
        session_id: id,
        transport: "websocket_fmp4",
        status: "ended",
        provider_type: rec!.provider_type,
        created_at: rec!.created_at,
        started_at: rec!.started_at,
        ended_at: rec!.ended_at,
        end_reason: "requested",
        duration_s: 5,
        chunks_rendered: 4,
      },
    );
  } finally {
    await app.close();
  }
});
