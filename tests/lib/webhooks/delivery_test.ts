import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { testApp } from "../../_helpers.ts";
import {
  getWebhookSecret,
  handleWebhookMessage,
  listDeliveries,
  retryDelivery,
  type WebhookAttempt,
  type WebhookEventBody,
  type WebhookEventRecord,
} from "../../../lib/webhooks/index.ts";
import type { AppDeps } from "../../../lib/deps.ts";
import {
  allEvents,
  FAKE_SECRETS,
  fakeMove,
  fakeSession,
  type Received,
  startReceiver,
  waitForState,
  waitUntil,
  WEBHOOK_ENV as ENV,
} from "./_helpers.ts";
import { OPERATOR } from "../../../lib/auth/principal.ts";

async function attemptsOf(
  deps: AppDeps,
  id: string,
): Promise<WebhookAttempt[]> {
  const out: WebhookAttempt[] = [];
  for await (
    const e of deps.kv.list<WebhookAttempt>({
      prefix: ["webhook_attempts", id],
    })
  ) out.push(e.value);
  return out;
}

async function verify(deps: AppDeps, tenant: string, r: Received) {
  const { secret } = await getWebhookSecret(deps, OPERATOR, tenant);
  return new Webhook(secret).verify(r.body, r.headers) as WebhookEventBody;
}

/** Creates a session with a webhook and waits for its session.created event record. */
async function createWithWebhook(
  deps: AppDeps,
  url: string,
  fields: Record<string, unknown> = {},
): Promise<{ session: Record<string, unknown>; event: WebhookEventRecord }> {
  const session = fakeSession({ webhook_url: url, ...fields });
  assert.equal(await fakeMove(deps, null, session), true);
  const event = (await allEvents(deps)).find((e) =>
    e.session_id === session.session_id
  );
  assert.ok(event, "the create committed an event record");
  return { session, event };
}

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

Deno.test("webhooks: a receiver failing twice still gets the event, same webhook-id", async () => {
  const rx = startReceiver((n) =>
    n <= 2 ? new Response("nope", { status: 500 }) : new Response("ok")
  );
  const t0 = await testApp({ ...ENV, WEBHOOK_RETRY_SCHEDULE_MS: "50,50,50" });
  const deps = t0.app.deps;
  try {
    const { event } = await createWithWebhook(deps, rx.url);
    const done = await waitForState(deps, event.event_id, "delivered");
    assert.equal(done.attempts, 3);
    assert.equal(rx.received.length, 3);
    assert.deepEqual(
      new Set(rx.received.map((r) => r.headers["webhook-id"])),
      new Set([event.event_id]),
    );
    for (const r of rx.received) await verify(deps, "tenant_a", r);
    const attempts = await attemptsOf(deps, event.event_id);
    assert.deepEqual(attempts.map((a) => [a.n, a.status]), [
      [1, 500],
      [2, 500],
      [3, 200],
    ]);
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: 410 stops at once with a dead letter", async () => {
  const rx = startReceiver(() => new Response("gone", { status: 410 }));
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const { event } = await createWithWebhook(deps, rx.url);
    const dead = await waitForState(deps, event.event_id, "dead");
    assert.equal(dead.attempts, 1);
    assert.match(dead.dead_reason ?? "", /gone/);
    assert.equal(rx.received.length, 1);
    const page = await listDeliveries(deps, OPERATOR, { only_dead: true });
    assert.deepEqual(page.items.map((i) => i.event_id), [event.event_id]);
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: a 3xx is a failure and is not followed", async () => {
  const target = startReceiver();
  const rx = startReceiver(() =>
    new Response(null, { status: 302, headers: { location: target.url } })
  );
  const t0 = await testApp({ ...ENV, WEBHOOK_RETRY_SCHEDULE_MS: "50" });
  const deps = t0.app.deps;
  try {
    const { event } = await createWithWebhook(deps, rx.url);
    const dead = await waitForState(deps, event.event_id, "dead");
    assert.equal(dead.attempts, 2);
    assert.match(dead.dead_reason ?? "", /retries exhausted.*HTTP 302/);
    assert.deepEqual(
      (await attemptsOf(deps, event.event_id)).map((a) => a.status),
      [302, 302],
    );
    assert.equal(target.received.length, 0);
  } finally {
    await t0.close();
    await rx.close();
    await target.close();
  }
});

Deno.test("webhooks: dead letter after the schedule, then retryDelivery re-sends", async (t) => {
  let healthy = false;
  const rx = startReceiver(() =>
    healthy ? new Response("ok") : new Response("down", { status: 500 })
  );
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const { event } = await createWithWebhook(deps, rx.url);
    const dead = await waitForState(deps, event.event_id, "dead");

    await t.step(
      "three attempts: the first and one per scheduled retry",
      async () => {
        assert.equal(dead.attempts, 3);
        assert.match(dead.dead_reason ?? "", /retries exhausted/);
        const attempts = await attemptsOf(deps, event.event_id);
        assert.deepEqual(attempts.map((a) => a.status), [500, 500, 500]);
        assert.equal(rx.received.length, 3);
      },
    );

    await t.step(
      "listDeliveries shows the event, its attempts and state",
      async () => {
        const page = await listDeliveries(deps, OPERATOR, {
          tenant_id: "tenant_a",
        });
        assert.equal(page.items.length, 1);
        assert.equal(page.items[0].state, "dead");
        assert.equal(page.items[0].attempt_log.length, 3);
        const other = await listDeliveries(deps, OPERATOR, {
          tenant_id: "tenant_b",
        });
        assert.equal(other.items.length, 0);
      },
    );

    await t.step(
      "retryDelivery sends it again with the same webhook-id",
      async () => {
        healthy = true;
        const res = await retryDelivery(deps, OPERATOR, event.event_id);
        assert.equal(res.ok, true);
        const done = await waitForState(deps, event.event_id, "delivered");
        assert.equal(done.attempts, 4);
        assert.equal(rx.received.length, 4);
        assert.equal(rx.received[3].headers["webhook-id"], event.event_id);
        await verify(deps, "tenant_a", rx.received[3]);
        const deadPage = await listDeliveries(deps, OPERATOR, {
          only_dead: true,
        });
        assert.equal(deadPage.items.length, 0);
      },
    );

    await t.step(
      "retryDelivery refuses delivered and unknown events",
      async () => {
        assert.deepEqual(await retryDelivery(deps, OPERATOR, event.event_id), {
          ok: false,
          reason: "not_retryable",
        });
        assert.deepEqual(await retryDelivery(deps, OPERATOR, "msg_nope"), {
          ok: false,
          reason: "not_found",
        });
      },
    );
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: a dead letter retried that fails again goes back to the dead letters", async () => {
  const rx = startReceiver(() => new Response("down", { status: 500 }));
  const t0 = await testApp({ ...ENV, WEBHOOK_RETRY_SCHEDULE_MS: "" + 50 });
  const deps = t0.app.deps;
  try {
    const { event } = await createWithWebhook(deps, rx.url);
    await waitForState(deps, event.event_id, "dead");
    assert.equal(rx.received.length, 2);
    assert.equal(
      (await retryDelivery(deps, OPERATOR, event.event_id)).ok,
      true,
    );
    await rx.waitFor(3);
    const dead = await waitForState(deps, event.event_id, "dead");
    assert.equal(dead.attempts, 3);
    assert.equal(rx.received.length, 3);
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: retryDelivery brings a scheduled retry forward; the scheduled message is then stale", async () => {
  const rx = startReceiver((n) =>
    n === 1 ? new Response("down", { status: 500 }) : new Response("ok")
  );
  const t0 = await testApp({ ...ENV, WEBHOOK_RETRY_SCHEDULE_MS: "600000" });
  const deps = t0.app.deps;
  try {
    const { event } = await createWithWebhook(deps, rx.url);
    const failed = await waitForState(deps, event.event_id, "failed");
    assert.ok(failed.next_attempt_at! - failed.last_attempt_at! >= 540_000);
    assert.equal(
      (await retryDelivery(deps, OPERATOR, event.event_id)).ok,
      true,
    );
    const done = await waitForState(deps, event.event_id, "delivered");
    assert.equal(done.attempts, 2);
    assert.equal(rx.received.length, 2);
    // What the scheduled message does when its delay is up:
    await handleWebhookMessage(deps, {
      kind: "webhook",
      event_id: event.event_id,
      attempt: 2,
    });
    assert.equal(rx.received.length, 2);
    assert.equal((await attemptsOf(deps, event.event_id)).length, 2);
  } finally {
    await t0.close();
    await rx.close();
  }
});
