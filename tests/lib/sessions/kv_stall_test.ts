/**
 * A create during a KV stall (the store's file write-locked by another connection, as in
 * tests/lib/media/faults_test.ts): answered 503, it must leave nothing behind once the
 * store is back — no session, no webhook event, no count against the tenant.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ApiError } from "../../../lib/errors.ts";
import { KV_TIMEOUT_MS, KvBudget } from "../../../lib/kv/store.ts";
import { insertSession } from "../../../lib/sessions/insert.ts";
import {
  sessionKey,
  type SessionRecord,
  sessionsByTenantKey,
  sessionsOpenKey,
  tenantOpenSessionsKey,
} from "../../../lib/sessions/store.ts";
import { testApp } from "../../_helpers.ts";
import {
  assertError,
  postCreate,
  tenantKey,
  validBody,
} from "../../routes/v1/sessions/_helpers.ts";

const WEBHOOK_URL = "https://hooks.example.com/avatar";

for (const idempotent of [false, true]) {
  Deno.test(`a create ${idempotent ? "with" : "without"} an Idempotency-Key answered 503 during a KV write stall leaves no session once the store is back`, async () => {
    const dir = await Deno.makeTempDir();
    const path = `${dir}/kv.sqlite`;
    const t = await testApp({ KV_PATH: path });
    let released: Promise<void> | undefined;
    try {
      const key = await tenantKey(t.app.deps, "t1");
      const body = { ...validBody(), webhook_url: WEBHOOK_URL };
      const headers: Record<string, string> = idempotent
        ? { "idempotency-key": "stall-1" }
        : {};

      const lock = new DatabaseSync(path);
      // Taking the lock waits for a write of the app's in flight (a heartbeat).
      lock.exec("PRAGMA busy_timeout = 5000");
      lock.exec("BEGIN EXCLUSIVE");
      let locked = true;
      // Held past the request's store time and one more commit attempt (SQLite's busy
      // wait of a commit is about 5 s), so a write still retried after the 503 would
      // be waiting for this lock when it goes.
      released = new Promise<void>((resolve) =>
        setTimeout(() => {
          locked = false;
          lock.exec("COMMIT");
          lock.close();
          resolve();
        }, KV_TIMEOUT_MS + 3000)
      );

      const stalled = await postCreate(t, body, { key, headers });
      await assertError(stalled, "AVTR_SESSION_STATE_UNAVAILABLE");
      assert.ok(locked, "answered while the store was still locked");
      await released;

      // The store is back: a create works (and queues behind any write still pending
      // on the handle), then a settle and a probe write flush what is left.
      const res = await postCreate(t, body, { key, headers });
      const after = await res.json();
      assert.equal(res.status, 200, JSON.stringify(after));
      await new Promise((r) => setTimeout(r, 200));
      await t.app.deps.kv.set(["probe"], 1);

      const stored = [];
      const records = t.app.deps.kv.list<SessionRecord>({
        prefix: sessionKey("").slice(0, -1),
      });
      for await (const e of records) stored.push(e.value.session_id);
      assert.deepEqual(stored, [after.session_id], "only the create answered");
      const indexed = [];
      const byTenant = { prefix: sessionsByTenantKey("t1", "").slice(0, -1) };
      for await (const e of t.app.deps.kv.list(byTenant)) indexed.push(e.value);
      assert.deepEqual(indexed, [after.session_id]);
      const counter = await t.app.deps.kv.get<Deno.KvU64>(
        tenantOpenSessionsKey("t1"),
      );
      assert.equal(counter.value?.value, 1n, "one session counted");
      const events = [];
      for await (
        const e of t.app.deps.kv.list<{ session_id: string; type: string }>({
          prefix: ["webhook_events"],
        })
      ) events.push([e.value.session_id, e.value.type]);
      assert.deepEqual(events, [[after.session_id, "session.created"]]);
    } finally {
      await released;
      await t.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("a create commit the store takes after its request's KV time ran out (answered 503) is undone: no record, index, count or webhook event stays", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const t = await testApp({ KV_PATH: path });
  let released: Promise<void> | undefined;
  try {
    const deps = t.app.deps;
    await deps.kv.set(["warm"], 1);
    const now = Date.now();
    const record: SessionRecord = {
      session_id: "session:01LATECOMMIT0000000000000",
      tenant_id: "t1",
      status: "created",
      provider_type: "vendor_b",
      transport: "websocket_fmp4",
      avatar_id: "avatar_default",
      bg_id: "bg_default",
      webhook_url: WEBHOOK_URL,
      created_at: now,
      owner: deps.instanceId,
      timeline: [{ status: "created", at: now }],
    };
    const lock = new DatabaseSync(path);
    // Taking the lock waits for a write of the app's in flight (a heartbeat).
    lock.exec("PRAGMA busy_timeout = 5000");
    lock.exec("BEGIN EXCLUSIVE");
    // A commit with checks fails at once on a locked file; a plain write waits in
    // SQLite's busy handler (about 5 s) and the handle runs its operations in order. A
    // write of the process started just before the commit (here by a session hook) so
    // holds the commit back until the lock goes at 1 s — after the request's 300 ms
    // were up — and the commit then goes through.
    let blocker: Promise<unknown> | undefined;
    deps.sessionHooks.inCommit.push(() => {
      blocker ??= deps.kv.set(["blocker"], 1);
    });
    released = new Promise<void>((resolve) =>
      setTimeout(() => {
        lock.exec("COMMIT");
        lock.close();
        resolve();
      }, 1000)
    );
    const err = await insertSession(
      deps,
      record,
      10,
      undefined,
      new KvBudget(300),
    )
      .catch((e) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
    await released;
    await blocker;
    await new Promise((r) => setTimeout(r, 300));
    await deps.kv.set(["probe"], 1);

    const got = await deps.kv.getMany([
      sessionKey(record.session_id),
      sessionsByTenantKey("t1", record.session_id),
      sessionsOpenKey(record.session_id),
    ]);
    assert.deepEqual(got.map((e) => e.versionstamp), [null, null, null]);
    const counter = await deps.kv.get<Deno.KvU64>(tenantOpenSessionsKey("t1"));
    assert.equal(counter.value?.value ?? 0n, 0n, "the count given back");
    const events = [];
    for await (const e of deps.kv.list({ prefix: ["webhook_events"] })) {
      events.push(e.key);
    }
    assert.deepEqual(events, [], "no session.created event stays");
    assert.ok(
      t.log.lines.some((l) =>
        l.includes("committed after the answer") && l.includes('"undone":true')
      ),
      "the late commit happened, and was undone",
    );
  } finally {
    await released;
    await t.close();
    await Deno.remove(dir, { recursive: true });
  }
});
