/**
 * Webhook delivery when the receiver fails: retries with the same webhook-id, 410 and
 * 3xx, dead letters after the schedule, and `retryDelivery` re-sending or bringing a
 * scheduled retry forward. Events sent on each move: delivery_test.ts.
 */
import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import {
  handleWebhookMessage,
  listDeliveries,
  retryDelivery,
} from "../../../lib/webhooks/index.ts";
import {
  attemptsOf,
  createWithWebhook,
  startReceiver,
  verify,
  waitForState,
  WEBHOOK_ENV as ENV,
} from "./_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";

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
    // Counted in the metrics: two retries, then delivered.
    const text = (await deps.metrics.expose()).body;
    assert.match(
      text,
      new RegExp(
        `avatar_webhook_attempts_total\\{type="${event.type}",outcome="retry"\\} 2`,
      ),
    );
    assert.match(
      text,
      new RegExp(
        `avatar_webhook_attempts_total\\{type="${event.type}",outcome="delivered"\\} 1`,
      ),
    );
    assert.match(text, /avatar_webhook_attempt_duration_seconds_count 3/);
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
    assert.match(
      (await deps.metrics.expose()).body,
      new RegExp(
        `avatar_webhook_attempts_total\\{type="${event.type}",outcome="dead"\\} 1`,
      ),
    );
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
