import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { authJson, TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";
import { moveSession } from "../../../lib/sessions.ts";
import {
  getWebhookSecret,
  type WebhookEventBody,
} from "../../../lib/webhooks/index.ts";
import type { AppDeps } from "../../../lib/deps.ts";
import { allEvents, startReceiver, waitForState } from "./_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";

const ENGINE_BEARER = "Bearer ENGINE-SECRET-0123456789";
const ENGINE_TOKEN = "ENGINE-URL-TOKEN-0123456789";

async function allDelivered(deps: AppDeps): Promise<void> {
  for (const e of await allEvents(deps)) {
    await waitForState(deps, e.event_id, "delivered");
  }
}

Deno.test("webhooks: real session moves (REST create, moveSession, REST end) send their events", async (t) => {
  const rx = startReceiver();
  const t0 = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: "50",
  });
  const deps = t0.app.deps;
  try {
    const create = (webhook_url?: string) =>
      t0.request("/v1/sessions", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify({
          provider_type: "external_engine",
          provider_config: {
            external_engine: {
              url: `wss://127.0.0.1:9/engine?token=${ENGINE_TOKEN}`,
              auth_headers: { authorization: ENGINE_BEARER },
            },
          },
          ...(webhook_url ? { webhook_url } : {}),
        }),
      });

    const res = await create(rx.url);
    assert.equal(res.status, 200);
    const created = await res.json();
    const id: string = created.session_id;
    assert.ok(
      (await moveSession(deps, id, {
        from: ["created"],
        to: "activating",
      })).ok,
    );
    assert.ok(
      (await moveSession(deps, id, {
        from: ["activating"],
        to: "active",
      })).ok,
    );
    const end = await t0.request(`/v1/sessions/${id}/end`, {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
    });
    assert.equal(end.status, 200);
    await end.body?.cancel();

    const failedRes = await create(rx.url);
    assert.equal(failedRes.status, 200);
    const failedId: string = (await failedRes.json()).session_id;
    assert.ok(
      (await moveSession(deps, failedId, {
        from: ["created"],
        to: "failed",
        reason: "connect_timeout",
      })).ok,
    );

    const quiet = await create();
    assert.equal(quiet.status, 200);
    await quiet.body?.cancel();

    await allDelivered(deps);

    await t.step(
      "one event per move, in order, none for the session without a URL",
      async () => {
        const events = await allEvents(deps);
        assert.deepEqual(events.map((e) => [e.session_id, e.type]), [
          [id, "session.created"],
          [id, "session.active"],
          [id, "session.ended"],
          [failedId, "session.created"],
          [failedId, "session.failed"],
        ]);
        assert.equal(rx.received.length, 5);
      },
    );

    await t.step(
      "every request verifies with the tenant's secret",
      async () => {
        const { secret } = await getWebhookSecret(deps, OPERATOR, "admin");
        for (const r of rx.received) {
          new Webhook(secret).verify(r.body, r.headers);
        }
      },
    );

    await t.step("the ended event carries the end facts", () => {
      const body = rx.received.map((r) =>
        JSON.parse(r.body) as WebhookEventBody
      )
        .find((b) => b.type === "session.ended")!;
      assert.equal(body.data.session_id, id);
      assert.equal(body.data.status, "ended");
      assert.equal(body.data.provider_type, "external_engine");
      assert.equal(typeof body.data.started_at, "number");
      assert.equal(typeof body.data.ended_at, "number");
      assert.equal(typeof body.data.duration_s, "number");
    });

    await t.step("no body holds a credential or token", () => {
      for (const r of rx.received) {
        assert.ok(!r.body.includes(ENGINE_BEARER));
        assert.ok(!r.body.includes(ENGINE_TOKEN));
        assert.ok(!r.body.includes(created.client_token));
        assert.ok(!r.body.includes("wss://"));
        assert.ok(!r.body.includes(TEST_ADMIN_KEY));
      }
    });
  } finally {
    await t0.close();
    await rx.close();
  }
});
