/**
 * Webhook delivery (lib/webhooks): each lifecycle move sends its event once, signed;
 * nothing without a webhook_url or a committed move. Failures, retries and dead
 * letters: retry_test.ts.
 */
import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import { type WebhookEventBody } from "../../../lib/webhooks/index.ts";
import {
  allEvents,
  attemptsOf,
  FAKE_SECRETS,
  fakeMove,
  fakeSession,
  startReceiver,
  verify,
  waitForState,
  waitUntil,
  WEBHOOK_ENV as ENV,
} from "./_helpers.ts";

Deno.test("webhooks: each lifecycle move sends its event once, signed", async (t) => {
  const rx = startReceiver();
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const created = fakeSession({ webhook_url: rx.url });
    const activating = { ...created, status: "activating" };
    const active = { ...activating, status: "active", started_at: 1_000 };
    const ended = {
      ...active,
      status: "ended_with_warnings",
      ended_at: 61_000,
      warning: "idle_timeout",
      chunks_rendered: 42,
      duration_s: 60,
    };
    const failedOne = fakeSession({ webhook_url: rx.url });
    assert.ok(await fakeMove(deps, null, created));
    assert.ok(await fakeMove(deps, created, activating));
    assert.ok(await fakeMove(deps, activating, active));
    assert.ok(await fakeMove(deps, active, { ...active, chunks_rendered: 3 }));
    assert.ok(await fakeMove(deps, active, ended));
    assert.ok(await fakeMove(deps, null, failedOne));
    assert.ok(
      await fakeMove(deps, failedOne, { ...failedOne, status: "failed" }),
    );

    const events = await allEvents(deps);
    assert.deepEqual(events.map((e) => e.type), [
      "session.created",
      "session.active",
      "session.ended",
      "session.created",
      "session.failed",
    ]);
    for (const e of events) await waitForState(deps, e.event_id, "delivered");

    await t.step("exactly one request per event", () => {
      assert.equal(rx.received.length, 5);
      const ids = rx.received.map((r) => r.headers["webhook-id"]).sort();
      assert.deepEqual(ids, events.map((e) => e.event_id).sort());
      for (const id of ids) assert.match(id, /^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    });

    await t.step("every request verifies with standardwebhooks", async () => {
      for (const r of rx.received) {
        assert.equal(r.headers["content-type"], "application/json");
        assert.match(r.headers["webhook-timestamp"], /^\d{10}$/);
        const body = await verify(deps, "tenant_a", r);
        assert.equal(typeof body.timestamp, "number");
      }
    });

    await t.step("the ended body carries the end fields and warning", () => {
      const r = rx.received.find((x) => x.body.includes("session.ended"))!;
      const body = JSON.parse(r.body) as WebhookEventBody;
      assert.deepEqual(body.data, {
        session_id: created.session_id,
        status: "ended_with_warnings",
        provider_type: "external_engine",
        transport: "websocket_fmp4",
        created_at: created.created_at,
        started_at: 1_000,
        ended_at: 61_000,
        warning: "idle_timeout",
        chunks_rendered: 42,
        duration_s: 60,
      });
      assert.deepEqual(Object.keys(body).sort(), ["data", "timestamp", "type"]);
    });

    await t.step("bodies hold none of the session's secrets", () => {
      for (const r of rx.received) {
        for (const s of FAKE_SECRETS) assert.ok(!r.body.includes(s), s);
        const data = (JSON.parse(r.body) as WebhookEventBody).data;
        for (const k of Object.keys(data)) {
          assert.ok(
            [
              "session_id",
              "status",
              "provider_type",
              "transport",
              "created_at",
              "started_at",
              "ended_at",
              "warning",
              "chunks_rendered",
              "duration_s",
            ].includes(k),
            k,
          );
        }
      }
    });

    await t.step("each attempt is recorded with its status", async () => {
      for (const e of events) {
        const attempts = await attemptsOf(deps, e.event_id);
        assert.equal(attempts.length, 1);
        assert.equal(attempts[0].n, 1);
        assert.equal(attempts[0].status, 200);
        assert.equal(typeof attempts[0].latency_ms, "number");
        assert.equal(typeof attempts[0].at, "number");
      }
    });

    await t.step(
      "a redelivered message for a delivered event does nothing",
      async () => {
        const id = events[0].event_id;
        await deps.kv.enqueue({ kind: "webhook", event_id: id, attempt: 1 });
        await deps.kv.enqueue({ kind: "webhook", event_id: id, attempt: 2 });
        await waitUntil(
          () =>
            t0.log.lines.filter((l) =>
                l.includes("webhook message ignored") && l.includes(id)
              ).length >= 2
              ? true
              : undefined,
          "both duplicates to be ignored",
        );
        assert.equal(rx.received.length, 5);
        assert.equal((await attemptsOf(deps, id)).length, 1);
      },
    );
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: no event without a webhook_url or without the move's commit", async () => {
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const plain = fakeSession();
    assert.ok(await fakeMove(deps, null, plain));
    const withUrl = fakeSession({ webhook_url: "https://127.0.0.1:9/hook" });
    assert.equal(
      await fakeMove(deps, null, withUrl, { failCheck: true }),
      false,
    );
    assert.deepEqual(await allEvents(deps), []);
    const idx = await Array.fromAsync(
      deps.kv.list({ prefix: ["webhook_events_by_tenant"] }),
    );
    assert.equal(idx.length, 0);
  } finally {
    await t0.close();
  }
});
