/**
 * `main.ts` stopping on SIGTERM (issue 29, lib/nodes/shutdown.ts), as its own process:
 * the session it holds ends as `instance_lost` (the browser's `session.ended`, the
 * webhook event) and the process exits 0, even with an engine that never closes on
 * `session.end` and a WebSocket upgrade whose client left before the handler answered
 * (which Deno's graceful server shutdown waits for forever); a second SIGTERM exits at
 * once with 143.
 */
import assert from "node:assert/strict";
import { TEST_ADMIN_KEY } from "./_helpers.ts";
import { startEcepFake } from "./fakes/ecep_engine_fake.ts";
import { type Instance, startInstance } from "./lib/media/_instance.ts";
import { abandonedUpgrade, connectActive } from "./lib/media/_live.ts";
import {
  EXIT_SHUTDOWN_CLEAN,
  secondSignalExitCode,
} from "../lib/nodes/shutdown.ts";
import type { WebhookEventRecord } from "../lib/webhooks/events.ts";

const ENGINE_KEY = "engine-key-3f9a1c7e5b";
const ENTRY = "tests/fixtures/slow_upgrade_child.ts";

/** The child's exit code; a child still running after `failAfterMs` is killed and fails the test. */
async function exitCode(inst: Instance, failAfterMs: number): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<"hung">((r) => {
    timer = setTimeout(() => r("hung"), failAfterMs);
  });
  const status = await Promise.race([inst.child.status, hung]);
  clearTimeout(timer);
  if (status === "hung") {
    inst.child.kill("SIGKILL");
    await inst.child.status;
    assert.fail(
      `the process did not exit within ${failAfterMs} ms of SIGTERM:\n${inst.output()}`,
    );
  }
  return status.code;
}

/** Creates an ECEP session with a webhook URL on `inst`. */
async function create(
  inst: Instance,
  engineUrl: string,
): Promise<{ session_id: string; client_token: string }> {
  const res = await fetch(`${inst.base}/v1/sessions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_ADMIN_KEY}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: engineUrl,
          auth_headers: { "x-engine-key": ENGINE_KEY },
        },
      },
      // Nothing listens there: the event is recorded whether or not it is delivered.
      webhook_url: "https://127.0.0.1:9/hooks",
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json();
}

Deno.test("SIGTERM ends the held session as instance_lost (session.ended, webhook event) and exits 0, past a stubborn engine and an abandoned upgrade", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const engine = startEcepFake({ key: ENGINE_KEY, stubborn: true });
  const inst = await startInstance(kvPath, {
    RENDER_MAX_SESSIONS: "8",
    END_CLEANUP_TIMEOUT_MS: "2000",
  }, { entry: ENTRY, keepOutput: true });
  try {
    const c = await create(inst, engine.url);
    const browser = await connectActive(inst, c.session_id, c.client_token, 2);
    await abandonedUpgrade(
      inst.base,
      `/v1/sessions/${encodeURIComponent(c.session_id)}/ws?token=${
        encodeURIComponent(c.client_token)
      }`,
    );
    inst.child.kill("SIGTERM");
    // The bound is END_CLEANUP_TIMEOUT_MS + 5 s; the test waits far longer before it
    // calls the process hung.
    assert.equal(
      await exitCode(inst, 60_000),
      EXIT_SHUTDOWN_CLEAN,
      inst.output(),
    );
    const ended = await browser.message(
      (m) => m.type === "session.ended",
      "session.ended",
    );
    assert.equal(ended.reason, "instance_lost");
    assert.equal(ended.status, "ended_with_warnings");
    assert.equal(await browser.closed(), 1000);

    const kv = await Deno.openKv(kvPath);
    try {
      const rec = (await kv.get<Record<string, unknown>>([
        "sessions",
        c.session_id,
      ])).value;
      assert.equal(rec?.status, "ended_with_warnings");
      assert.equal(rec?.end_reason, "instance_lost");
      const events: WebhookEventRecord[] = [];
      for await (
        const e of kv.list<WebhookEventRecord>({ prefix: ["webhook_events"] })
      ) {
        if (e.value.session_id === c.session_id) events.push(e.value);
      }
      const event = events.find((e) => e.type === "session.ended");
      assert.ok(event, `events: ${events.map((e) => e.type)}`);
      assert.equal(JSON.parse(event.body).data.end_reason, "instance_lost");
      // The node is gone from the registry at once, not after 3.5 heartbeats.
      for await (const e of kv.list({ prefix: ["instances"] })) {
        assert.fail(`an instance record is left: ${JSON.stringify(e.key)}`);
      }
    } finally {
      kv.close();
    }
    assert.match(inst.output(), /"msg":"shut down"/);
  } finally {
    await inst.stop("SIGKILL");
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a second SIGTERM during the shutdown exits at once with 143", async () => {
  const dir = await Deno.makeTempDir();
  const engine = startEcepFake({ key: ENGINE_KEY, stubborn: true });
  // The first shutdown waits up to a minute for the engine to close.
  const inst = await startInstance(`${dir}/kv.sqlite`, {
    RENDER_MAX_SESSIONS: "8",
    END_CLEANUP_TIMEOUT_MS: "60000",
  }, { entry: ENTRY, keepOutput: true });
  try {
    const c = await create(inst, engine.url);
    const browser = await connectActive(inst, c.session_id, c.client_token, 2);
    inst.child.kill("SIGTERM");
    for (
      let i = 0;
      i < 200 && !/"msg":"shutting down"/.test(inst.output());
      i++
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(inst.output(), /"msg":"shutting down"/);
    inst.child.kill("SIGTERM");
    assert.equal(await exitCode(inst, 20_000), secondSignalExitCode("SIGTERM"));
    assert.match(inst.output(), /"msg":"second signal: exiting at once"/);
    browser.close();
  } finally {
    await inst.stop("SIGKILL");
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
});
