import assert from "node:assert/strict";
import type {
  EndLiveOptions,
  EndLiveResult,
} from "../../../../../lib/runtime.ts";
import {
  endSessionResponseSchema,
  type SessionStatus,
} from "../../../../../lib/api/schemas.ts";
import { readSession, sessionsOpenKey } from "../../../../../lib/sessions.ts";
import {
  TEST_ADMIN_KEY,
  type TestApp,
  TestClock,
} from "../../../../_helpers.ts";
import {
  assertError,
  createOk,
  driveTo,
  keyRequest,
  sessionApp,
  tenantKey,
  validBody,
} from "../_helpers.ts";

function end(
  app: TestApp,
  id: string,
  query = "",
  key = TEST_ADMIN_KEY,
): Promise<Response> {
  return keyRequest(app, `/v1/sessions/${id}/end${query}`, {
    method: "POST",
    key,
  });
}

/** Records the runtime calls and answers with `result`. */
function recordRuntime(app: TestApp, result: EndLiveResult) {
  const calls: { id: string; options: EndLiveOptions }[] = [];
  app.app.deps.runtime = {
    endLive: (id, options) => {
      calls.push({ id, options });
      return Promise.resolve(result);
    },
  };
  return calls;
}

Deno.test("POST /v1/sessions/{id}/end ends an active session", async (t) => {
  const clock = new TestClock();
  const app = await sessionApp({ END_CLEANUP_TIMEOUT_MS: "4321" }, { clock });
  const deps = app.app.deps;
  try {
    const calls = recordRuntime(app, { chunksRendered: 42 });
    const id = await createOk(app);
    await driveTo(deps, id, "active");
    const startedAt = clock.now();
    clock.advance(12_500);
    const res = await end(app, id);
    assert.equal(res.status, 200);
    const body = endSessionResponseSchema.parse(await res.json());
    assert.deepEqual(body, {
      session_id: id,
      status: "ended",
      ended_at: startedAt + 12_500,
      chunks_rendered: 42,
      duration_s: 12.5,
    });
    await t.step("the runtime was asked for a graceful teardown", () => {
      assert.deepEqual(calls, [{
        id,
        options: { force: false, timeoutMs: 4321 },
      }]);
    });
    await t.step("the session is terminal and released", async () => {
      const rec = await readSession(deps, id);
      assert.equal(rec?.status, "ended");
      assert.deepEqual(rec?.timeline.map((x) => x.status), [
        "created",
        "activating",
        "active",
        "ending",
        "ended",
      ]);
      assert.equal(deps.vault.has(id), false);
      assert.equal(deps.renderSlots.has(id), false);
      assert.equal((await deps.kv.get(sessionsOpenKey(id))).value, null);
    });
    await t.step("a second end → 409 AVTR_SESSION_ENDED", async () => {
      await assertError(await end(app, id), "AVTR_SESSION_ENDED");
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions/{id}/end passes force=true and reports warnings", async (t) => {
  const app = await sessionApp();
  const deps = app.app.deps;
  try {
    await t.step("force=true reaches the runtime", async () => {
      const calls = recordRuntime(app, { chunksRendered: 0 });
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      const res = await end(app, id, "?force=true");
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(calls[0].options.force, true);
    });
    await t.step("force=false is graceful", async () => {
      const calls = recordRuntime(app, { chunksRendered: 0 });
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      const res = await end(app, id, "?force=false");
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal(calls[0].options.force, false);
    });
    await t.step("a cleanup warning → ended_with_warnings", async () => {
      recordRuntime(app, {
        warning: "Renderer did not stop in time",
        chunksRendered: 3,
      });
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      const res = await end(app, id);
      const body = endSessionResponseSchema.parse(await res.json());
      assert.equal(body.status, "ended_with_warnings");
      assert.equal(body.warning, "Renderer did not stop in time");
      assert.equal(body.chunks_rendered, 3);
      assert.equal(
        (await readSession(deps, id))?.status,
        "ended_with_warnings",
      );
      await assertError(await end(app, id), "AVTR_SESSION_ENDED");
    });
    await t.step("a failing runtime → ended_with_warnings", async () => {
      deps.runtime = { endLive: () => Promise.reject(new Error("boom")) };
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      const body = endSessionResponseSchema.parse(
        await (await end(app, id)).json(),
      );
      assert.equal(body.status, "ended_with_warnings");
      assert.equal(body.warning, "Media cleanup failed");
      assert.equal(deps.vault.has(id), false);
    });
    for (
      const bad of [
        "?force=yes",
        "?force=1",
        "?force=",
        "?force=true&force=true",
        "?force=TRUE",
      ]
    ) {
      await t.step(`force ${bad} → 400`, async () => {
        const id = await createOk(app);
        await driveTo(deps, id, "active");
        await assertError(
          await end(app, id, bad),
          "AVTR_REQUEST_INVALID",
          "force",
        );
        assert.equal((await readSession(deps, id))?.status, "active");
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions/{id}/end answers 409 from every state but active", async (t) => {
  const app = await sessionApp();
  const deps = app.app.deps;
  try {
    const cases: [
      SessionStatus,
      "AVTR_SESSION_CONFLICT" | "AVTR_SESSION_ENDED",
    ][] = [
      ["created", "AVTR_SESSION_CONFLICT"],
      ["activating", "AVTR_SESSION_CONFLICT"],
      ["ending", "AVTR_SESSION_CONFLICT"],
      ["failed", "AVTR_SESSION_CONFLICT"],
      ["ended", "AVTR_SESSION_ENDED"],
      ["ended_with_warnings", "AVTR_SESSION_ENDED"],
    ];
    for (const [status, code] of cases) {
      await t.step(`${status} → 409 ${code}`, async () => {
        const id = await createOk(app);
        await driveTo(deps, id, status);
        await assertError(await end(app, id), code);
        assert.equal((await readSession(deps, id))?.status, status);
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions/{id}/end lets exactly one of two concurrent ends win", async () => {
  const app = await sessionApp();
  const deps = app.app.deps;
  try {
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    let calls = 0;
    deps.runtime = {
      endLive: async () => {
        calls++;
        await gate;
        return { chunksRendered: 1 };
      },
    };
    for (let round = 0; round < 5; round++) {
      const id = await createOk(app);
      await driveTo(deps, id, "active");
      const pending = [end(app, id), end(app, id)];
      if (round === 0) {
        // The loser answers while the winner is still tearing down.
        const loser = await Promise.race(pending);
        await assertError(loser, "AVTR_SESSION_CONFLICT");
        release();
      }
      const responses = await Promise.all(pending);
      const statuses = responses.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 409]);
      for (const r of responses) if (!r.bodyUsed) await r.body?.cancel();
    }
    assert.equal(calls, 5);
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions/{id}/end answers the same 404 for absent, foreign and malformed ids", async (t) => {
  const app = await sessionApp();
  const deps = app.app.deps;
  try {
    const other = await tenantKey(deps, "acme");
    const id = await createOk(app);
    await driveTo(deps, id, "active");
    const bodies: unknown[] = [];
    const cases: [string, string, string][] = [
      ["absent", "session:01HZZZZZZZZZZZZZZZZZZZZZZZ", TEST_ADMIN_KEY],
      ["another tenant's", id, other],
      ["malformed id", "sess_123", TEST_ADMIN_KEY],
      ["encoded slash", "session:a%2Fb", TEST_ADMIN_KEY],
      ["empty suffix", "session:", TEST_ADMIN_KEY],
    ];
    for (const [name, target, key] of cases) {
      await t.step(name, async () => {
        const body = await assertError(
          await end(app, target, "", key),
          "AVTR_SESSION_NOT_FOUND",
        );
        bodies.push({ ...body, request_id: undefined });
      });
    }
    await t.step("all bodies are identical", () => {
      for (const b of bodies) assert.deepEqual(b, bodies[0]);
    });
    await t.step("the foreign session was not touched", async () => {
      assert.equal((await readSession(deps, id))?.status, "active");
    });
    await t.step("a read-only key → 403", async () => {
      const ro = await tenantKey(deps, "admin", ["sessions:read"]);
      await assertError(await end(app, id, "", ro), "AVTR_AUTH_MISSING_SCOPE");
    });
    await t.step("no key → 401", async () => {
      const res = await app.request(`/v1/sessions/${id}/end`, {
        method: "POST",
      });
      await assertError(res, "AVTR_AUTH_MISSING_CREDENTIALS");
    });
  } finally {
    await app.close();
  }
});

Deno.test("DELETE /v1/sessions/{id} is a deprecated alias of end", async (t) => {
  const app = await sessionApp();
  const deps = app.app.deps;
  try {
    const id = await createOk(app, validBody("vendor_a_realtime"));
    await driveTo(deps, id, "active");
    const del = () =>
      keyRequest(app, `/v1/sessions/${id}?force=true`, { method: "DELETE" });
    await t.step("ends the session with the alias headers", async () => {
      const res = await del();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("deprecation"), "true");
      assert.equal(
        res.headers.get("link"),
        `</v1/sessions/${id}/end>; rel="successor-version"`,
      );
      assert.equal(
        endSessionResponseSchema.parse(await res.json()).status,
        "ended",
      );
    });
    await t.step("errors carry the alias headers too", async () => {
      const res = await del();
      assert.equal(res.headers.get("deprecation"), "true");
      assert.equal(
        res.headers.get("link"),
        `</v1/sessions/${id}/end>; rel="successor-version"`,
      );
      await assertError(res, "AVTR_SESSION_ENDED");
    });
    await t.step(
      "the Link keeps the id as encoded in the request",
      async () => {
        const encoded = id.replace(":", "%3A");
        const res = await keyRequest(app, `/v1/sessions/${encoded}`, {
          method: "DELETE",
        });
        assert.equal(
          res.headers.get("link"),
          `</v1/sessions/${encoded}/end>; rel="successor-version"`,
        );
        await assertError(res, "AVTR_SESSION_ENDED");
      },
    );
  } finally {
    await app.close();
  }
});
