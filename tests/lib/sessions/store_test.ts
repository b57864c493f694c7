import assert from "node:assert/strict";
import {
  counterValue,
  isTerminal,
  KV_U64_MINUS_ONE,
  listSessions,
  moveSession,
  readSession,
  type SessionRecord,
  sessionsByTenantKey,
  sessionsOpenKey,
  tenantOpenSessionsKey,
  TERMINAL_RETENTION_MS,
  TERMINAL_STATUSES,
} from "../../../lib/sessions.ts";
import { testApp, TestClock } from "../../_helpers.ts";
import {
  createOk,
  driveTo,
  tenantKey,
  validBody,
} from "../../routes/v1/sessions/_helpers.ts";

Deno.test("Deno KV sum wraps a KvU64 around 2^64, so adding 2^64-1 subtracts one", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await kv.set(["c"], new Deno.KvU64(3n));
    await kv.atomic().sum(["c"], KV_U64_MINUS_ONE.value).commit();
    assert.equal((await kv.get<Deno.KvU64>(["c"])).value?.value, 2n);
    await kv.atomic().sum(["c"], KV_U64_MINUS_ONE.value).sum(
      ["c"],
      KV_U64_MINUS_ONE.value,
    ).commit();
    assert.equal((await kv.get<Deno.KvU64>(["c"])).value?.value, 0n);
    // Below zero it wraps; counterValue() reads that as 0.
    await kv.atomic().sum(["c"], KV_U64_MINUS_ONE.value).commit();
    const e = await kv.get(["c"]);
    assert.equal((e.value as Deno.KvU64).value, (1n << 64n) - 1n);
    assert.equal(counterValue(e), 0);
    // A sum does not need the versionstamp: two decrements in flight both land.
    await kv.set(["d"], new Deno.KvU64(2n));
    await Promise.all([
      kv.atomic().sum(["d"], KV_U64_MINUS_ONE.value).commit(),
      kv.atomic().sum(["d"], KV_U64_MINUS_ONE.value).commit(),
    ]);
    assert.equal((await kv.get<Deno.KvU64>(["d"])).value?.value, 0n);
  } finally {
    kv.close();
  }
});

Deno.test("moveSession() moves checked against the state read, with hooks and terminal effects", async (t) => {
  const clock = new TestClock();
  const app = await testApp({ RENDER_MAX_SESSIONS: "8" }, { clock });
  const deps = app.app.deps;
  const seen: string[] = [];
  deps.sessionHooks.inCommit.push((op, before, after) => {
    const a = after as SessionRecord;
    seen.push(
      `in:${(before as SessionRecord | null)?.status ?? "null"}->${a.status}`,
    );
    op.set(["hook_marker", a.session_id], a.status);
  });
  deps.sessionHooks.afterCommit.push((before, after) => {
    seen.push(
      `after:${(before as SessionRecord | null)?.status ?? "null"}->${
        (after as SessionRecord).status
      }`,
    );
  });
  deps.sessionHooks.afterCommit.push(() => {
    throw new Error("a broken hook must not break the move");
  });
  try {
    const id = await createOk(app);
    await t.step(
      "create runs the hooks with before = null in the same commit",
      async () => {
        assert.deepEqual(seen, ["in:null->created", "after:null->created"]);
        assert.equal((await deps.kv.get(["hook_marker", id])).value, "created");
        assert.equal(
          counterValue(await deps.kv.get(tenantOpenSessionsKey("admin"))),
          1,
        );
      },
    );
    await t.step(
      "a move from a state the session is not in is refused",
      async () => {
        const r = await moveSession(deps, id, {
          from: ["active"],
          to: "ending",
          reason: "requested",
        });
        assert.equal(r.ok, false);
        assert.equal(!r.ok && r.reason, "wrong_state");
        assert.equal(!r.ok && r.session?.status, "created");
      },
    );
    await t.step(
      "a move into ending or a terminal state without a reason is refused",
      async () => {
        for (const to of ["ending", ...TERMINAL_STATUSES] as const) {
          await assert.rejects(
            // @ts-expect-error: the type requires a reason for this move
            moveSession(deps, id, { from: ["created"], to }),
            TypeError,
          );
        }
        assert.equal((await readSession(deps, id))?.status, "created");
      },
    );
    await t.step("an absent session → not_found", async () => {
      const r = await moveSession(deps, "session:NONE", {
        from: ["created"],
        to: "failed",
        reason: "connect_timeout",
      });
      assert.deepEqual(r, { ok: false, reason: "not_found" });
    });
    await t.step("active sets started_at, timeline grows", async () => {
      clock.advance(1000);
      await moveSession(deps, id, { from: ["created"], to: "activating" });
      clock.advance(1000);
      const r = await moveSession(deps, id, {
        from: ["activating"],
        to: "active",
      });
      assert.equal(r.ok, true);
      if (!r.ok) return;
      assert.equal(r.previous.status, "activating");
      assert.equal(r.session.started_at, clock.now());
      assert.deepEqual(r.session.timeline.map((x) => x.status), [
        "created",
        "activating",
        "active",
      ]);
      assert.equal((await deps.kv.get(["hook_marker", id])).value, "active");
    });
    await t.step(
      "a terminal move releases everything in one commit",
      async () => {
        assert.equal(deps.vault.has(id), true);
        assert.equal(deps.renderSlots.has(id), true);
        clock.advance(4000);
        const r = await moveSession(deps, id, {
          from: ["active"],
          to: "ended_with_warnings",
          reason: "idle_timeout",
          patch: { warning: "idle" },
        });
        assert.equal(r.ok, true);
        const rec = await readSession(deps, id);
        assert.equal(rec?.status, "ended_with_warnings");
        assert.equal(rec?.ended_at, clock.now());
        assert.equal(rec?.duration_s, 4);
        assert.equal(rec?.warning, "idle");
        assert.equal(rec?.retain_until, clock.now() + TERMINAL_RETENTION_MS);
        assert.equal((await deps.kv.get(sessionsOpenKey(id))).value, null);
        assert.equal(
          (await deps.kv.get(sessionsByTenantKey("admin", id))).value,
          id,
        );
        assert.equal(
          counterValue(await deps.kv.get(tenantOpenSessionsKey("admin"))),
          0,
        );
        assert.equal(deps.vault.has(id), false);
        assert.equal(deps.renderSlots.has(id), false);
        assert.equal(seen.at(-1), "after:active->ended_with_warnings");
      },
    );
    await t.step("terminal sessions never move again", async () => {
      for (const to of TERMINAL_STATUSES) {
        const r = await moveSession(deps, id, {
          from: ["ended_with_warnings"],
          to,
          reason: "forced",
        });
        assert.equal(!r.ok && r.reason, "wrong_state");
      }
      assert.equal(
        counterValue(await deps.kv.get(tenantOpenSessionsKey("admin"))),
        0,
      );
    });
    await t.step(
      "concurrent moves of one session: exactly one wins",
      async () => {
        const other = await createOk(app);
        const results = await Promise.all(
          Array.from(
            { length: 8 },
            () =>
              moveSession(deps, other, {
                from: ["created"],
                to: "failed",
                reason: "connect_timeout",
              }),
          ),
        );
        assert.equal(
          results.filter((r) => r.ok).length,
          1,
        );
        assert.equal(
          counterValue(await deps.kv.get(tenantOpenSessionsKey("admin"))),
          0,
        );
        const rec = await readSession(deps, other);
        assert.deepEqual(rec?.timeline.map((x) => x.status), [
          "created",
          "failed",
        ]);
      },
    );
  } finally {
    await app.close();
  }
});

Deno.test("isTerminal() names the three terminal states", () => {
  assert.deepEqual(
    ([
      "created",
      "activating",
      "active",
      "ending",
      "ended",
      "ended_with_warnings",
      "failed",
    ] as const).filter(isTerminal),
    ["ended", "ended_with_warnings", "failed"],
  );
});

Deno.test("listSessions() pages newest first, by tenant and status", async (t) => {
  const clock = new TestClock();
  const app = await testApp({
    RENDER_MAX_SESSIONS: "64",
    MAX_CONCURRENT_SESSIONS: "64",
  }, { clock });
  const deps = app.app.deps;
  try {
    const acme = await tenantKey(deps, "acme");
    const adminIds: string[] = [];
    const acmeIds: string[] = [];
    for (let i = 0; i < 7; i++) {
      clock.advance(10);
      adminIds.push(await createOk(app));
      clock.advance(10);
      acmeIds.push(await createOk(app, validBody(), acme));
    }
    await driveTo(deps, acmeIds[1], "failed");
    await driveTo(deps, acmeIds[4], "failed");
    await t.step("all sessions, newest first, in pages", async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await listSessions(deps, { limit: 4, cursor });
        assert.ok(page.sessions.length <= 4);
        seen.push(...page.sessions.map((s) => s.session_id));
        cursor = page.cursor;
      } while (cursor);
      const all = [...adminIds, ...acmeIds].sort().reverse();
      assert.deepEqual(seen, all);
    });
    await t.step("one tenant's, in pages", async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await listSessions(deps, {
          tenant_id: "acme",
          limit: 3,
          cursor,
        });
        seen.push(...page.sessions.map((s) => s.session_id));
        cursor = page.cursor;
      } while (cursor);
      assert.deepEqual(seen, [...acmeIds].reverse());
    });
    await t.step("by status", async () => {
      const failed = await listSessions(deps, {
        tenant_id: "acme",
        status: "failed",
      });
      assert.deepEqual(failed.sessions.map((s) => s.session_id), [
        acmeIds[4],
        acmeIds[1],
      ]);
      assert.equal(failed.cursor, undefined);
      const all = await listSessions(deps, { status: "failed", limit: 1 });
      assert.deepEqual(all.sessions.map((s) => s.session_id), [acmeIds[4]]);
      const next = await listSessions(deps, {
        status: "failed",
        limit: 1,
        cursor: all.cursor,
      });
      assert.deepEqual(next.sessions.map((s) => s.session_id), [acmeIds[1]]);
    });
  } finally {
    await app.close();
  }
});
