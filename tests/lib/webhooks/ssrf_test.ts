import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import type { WebhookAttempt } from "../../../lib/webhooks/index.ts";
import type { AppDeps } from "../../../lib/deps.ts";
import {
  allEvents,
  fakeMove,
  fakeSession,
  startReceiver,
  waitForState,
} from "./_helpers.ts";

/** Sends one event to `url` and returns its dead letter's reason and attempt. */
async function deadLetterFor(deps: AppDeps, url: string) {
  const session = fakeSession({ webhook_url: url });
  assert.ok(await fakeMove(deps, null, session));
  const event = (await allEvents(deps)).find((e) =>
    e.session_id === session.session_id
  )!;
  const dead = await waitForState(deps, event.event_id, "dead");
  const attempt = (await deps.kv.get<WebhookAttempt>([
    "webhook_attempts",
    event.event_id,
    1,
  ])).value!;
  return { dead, attempt };
}

Deno.test("webhooks: private targets are refused without ALLOW_PRIVATE_NETWORK_TARGETS", async (t) => {
  const rx = startReceiver();
  const t0 = await testApp({ WEBHOOK_RETRY_SCHEDULE_MS: "50,50" });
  const deps = t0.app.deps;
  try {
    const port = new URL(rx.url).port;
    const targets = [
      rx.url,
      `https://localhost:${port}/hook`,
      `https://[::1]:${port}/hook`,
      "https://169.254.169.254/latest/meta-data/",
      "https://10.1.2.3/hook",
      "https://192.168.1.1/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://[fd00::1]/hook",
    ];
    for (const url of targets) {
      await t.step(`${url} → dead letter at once`, async () => {
        const { dead, attempt } = await deadLetterFor(deps, url);
        assert.equal(dead.attempts, 1);
        assert.match(dead.dead_reason ?? "", /private or loopback/);
        assert.equal(attempt.status, undefined);
        assert.match(attempt.error ?? "", /private or loopback/);
      });
    }
    assert.equal(rx.received.length, 0);
    assert.ok(
      !t0.log.lines.some((l) => l.includes(port)),
      "no log line names the refused target",
    );
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: only https targets without credentials are sent to, even when private ones are allowed", async (t) => {
  const rx = startReceiver();
  const t0 = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: "50,50",
  });
  const deps = t0.app.deps;
  try {
    const port = new URL(rx.url).port;
    const cases: [string, RegExp][] = [
      [`http://127.0.0.1:${port}/hook`, /scheme must be https/],
      [`https://user:pw@127.0.0.1:${port}/hook`, /credentials/],
      ["not a url", /not a valid URL/],
    ];
    for (const [url, reason] of cases) {
      await t.step(`${url} → refused`, async () => {
        const { dead } = await deadLetterFor(deps, url);
        assert.equal(dead.attempts, 1);
        assert.match(dead.dead_reason ?? "", reason);
      });
    }
    assert.equal(rx.received.length, 0);

    await t.step(
      "the loopback https receiver is allowed with the flag",
      async () => {
        const session = fakeSession({ webhook_url: rx.url });
        assert.ok(await fakeMove(deps, null, session));
        const event = (await allEvents(deps)).find((e) =>
          e.session_id === session.session_id
        )!;
        await waitForState(deps, event.event_id, "delivered");
        assert.equal(rx.received.length, 1);
      },
    );
  } finally {
    await t0.close();
    await rx.close();
  }
});
