import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { testApp } from "../../_helpers.ts";
import { getWebhookSecret } from "../../../lib/webhooks/index.ts";
import {
  readEvent,
  sendOneEvent,
  startReceiver,
  waitForState,
} from "./_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";

Deno.test("webhooks: a retry scheduled before a restart is delivered after it", async () => {
  const dir = await Deno.makeTempDir();
  const env = {
    KV_PATH: `${dir}/kv.sqlite3`,
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    // Wide enough that the first app is closed long before the retry is due.
    WEBHOOK_RETRY_SCHEDULE_MS: "1500",
  };
  const rx = startReceiver((n) =>
    n === 1 ? new Response("down", { status: 503 }) : new Response("ok")
  );
  try {
    let eventId: string;
    const first = await testApp(env);
    try {
      const deps = first.app.deps;
      eventId = await sendOneEvent(deps, rx.url);
      const failed = await waitForState(deps, eventId, "failed");
      assert.equal(failed.attempts, 1);
    } finally {
      await first.close();
    }
    assert.equal(rx.received.length, 1);

    const second = await testApp(env);
    try {
      const deps = second.app.deps;
      const stillFailed = (await readEvent(deps, eventId))!;
      assert.equal(stillFailed.state, "failed", "no retry ran before restart");
      const done = await waitForState(deps, eventId, "delivered");
      assert.equal(done.attempts, 2);
      assert.equal(rx.received.length, 2);
      assert.equal(rx.received[1].headers["webhook-id"], eventId);
      const { secret } = await getWebhookSecret(deps, OPERATOR, "tenant_a");
      new Webhook(secret).verify(rx.received[1].body, rx.received[1].headers);
    } finally {
      await second.close();
    }
  } finally {
    await rx.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("webhooks: an attempt cut off by shutdown is made again after the restart", async () => {
  const dir = await Deno.makeTempDir();
  const env = {
    KV_PATH: `${dir}/kv.sqlite3`,
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: "50",
  };
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const rx = startReceiver(async (n) => {
    if (n === 1) await held;
    return new Response("ok");
  });
  try {
    let eventId: string;
    const first = await testApp(env);
    try {
      const deps = first.app.deps;
      eventId = await sendOneEvent(deps, rx.url);
      await rx.waitFor(1);
    } finally {
      await first.close();
    }

    const second = await testApp(env);
    try {
      const deps = second.app.deps;
      const before = (await readEvent(deps, eventId))!;
      assert.equal(before.attempts, 0, "the cut-off attempt was not counted");
      const done = await waitForState(deps, eventId, "delivered");
      assert.equal(done.attempts, 1);
      assert.equal(rx.received.length, 2);
      assert.equal(rx.received[1].headers["webhook-id"], eventId);
    } finally {
      await second.close();
    }
  } finally {
    release();
    await rx.close();
    await Deno.remove(dir, { recursive: true });
  }
});
