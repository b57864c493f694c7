import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import {
  parseRetryAfter,
  retryDelay,
  type WebhookAttempt,
} from "../../../lib/webhooks/index.ts";
import {
  sendOneEvent,
  startReceiver,
  waitForState,
  waitUntil,
  WEBHOOK_ENV as ENV,
} from "./_helpers.ts";

Deno.test("parseRetryAfter() reads seconds and HTTP dates, capped at 24 h", async (t) => {
  const now = Date.UTC(2026, 0, 1, 0, 0, 0);
  const cases: [string | null, number | undefined][] = [
    [null, undefined],
    ["", undefined],
    ["soon", undefined],
    ["0", 0],
    ["30", 30_000],
    [new Date(now + 90_000).toUTCString(), 90_000],
    [new Date(now - 90_000).toUTCString(), 0],
    ["999999", 24 * 3600 * 1000],
  ];
  for (const [value, want] of cases) {
    await t.step(`${JSON.stringify(value)} → ${want}`, () => {
      assert.equal(parseRetryAfter(value, now), want);
    });
  }
});

Deno.test("retryDelay() follows the schedule with ±10% jitter", () => {
  const schedule = [5_000, 30_000, 120_000];
  assert.equal(retryDelay(schedule, 1, () => 0), 4_500);
  assert.equal(retryDelay(schedule, 1, () => 1), 5_500);
  assert.equal(retryDelay(schedule, 2, () => 0.5), 30_000);
  assert.equal(retryDelay(schedule, 3, () => 0.5), 120_000);
  assert.equal(retryDelay(schedule, 9, () => 0.5), 120_000);
});

Deno.test("webhooks: the default schedule is DECISIONS 8's", async () => {
  const t0 = await testApp({});
  try {
    assert.deepEqual(t0.app.deps.config.webhookRetryScheduleMs, [
      5_000,
      30_000,
      120_000,
      600_000,
      1_800_000,
      3_600_000,
      10_800_000,
      21_600_000,
      43_200_000,
    ]);
    assert.equal(t0.app.deps.config.webhookTimeoutMs, 10_000);
  } finally {
    await t0.close();
  }
});

Deno.test("webhooks: Retry-After on 429 pushes the retry past the schedule", async () => {
  const rx = startReceiver((n) =>
    n === 1
      ? new Response("slow down", {
        status: 429,
        headers: { "retry-after": "1" },
      })
      : new Response("ok")
  );
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const eventId = await sendOneEvent(deps, rx.url);
    const failed = await waitForState(deps, eventId, "failed");
    assert.ok(failed.next_attempt_at! - failed.last_attempt_at! >= 1_000);
    const done = await waitForState(deps, eventId, "delivered");
    assert.equal(done.attempts, 2);
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: a receiver slower than the timeout is a failed attempt, then retried", async () => {
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const rx = startReceiver(async (n) => {
    if (n === 1) await held;
    return new Response("ok");
  });
  const t0 = await testApp({ ...ENV, WEBHOOK_TIMEOUT_MS: "200" });
  const deps = t0.app.deps;
  try {
    const eventId = await sendOneEvent(deps, rx.url);
    const done = await waitForState(deps, eventId, "delivered");
    assert.equal(done.attempts, 2);
    const first = (await deps.kv.get<WebhookAttempt>([
      "webhook_attempts",
      eventId,
      1,
    ])).value!;
    assert.equal(first.status, undefined);
    assert.match(first.error ?? "", /^timeout after 200 ms$/);
  } finally {
    release();
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: an endless response body is read only in part", async () => {
  const chunk = new Uint8Array(64 * 1024);
  let cancelled = false;
  const rx = startReceiver(() =>
    new Response(
      new ReadableStream({
        pull(c) {
          c.enqueue(chunk);
        },
        cancel() {
          cancelled = true;
        },
      }),
    )
  );
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const eventId = await sendOneEvent(deps, rx.url);
    const done = await waitForState(deps, eventId, "delivered");
    assert.equal(done.attempts, 1);
    await waitUntil(() => cancelled || undefined, "the body to be cancelled");
  } finally {
    await t0.close();
    await rx.close();
  }
});
