import assert from "node:assert/strict";
import { OPERATOR } from "../../../lib/principal.ts";
import { instanceKey, instanceStaleMs } from "../../../lib/media/presence.ts";
import { listInstances, sessionHolder } from "../../../lib/nodes/registry.ts";
import { testApp, TestClock } from "../../_helpers.ts";

/** A control plane writes no record of its own, so the store holds only the test's. */
const CONTROL = { SERVICE_ROLE: "control", NODE_SECRET: "s".repeat(32) };

Deno.test("listInstances() lists live records first, then the most recently heard; nothing to a tenant", async () => {
  const clock = new TestClock();
  const app = await testApp(CONTROL, { clock });
  try {
    const deps = app.app.deps;
    const stale = clock.t - instanceStaleMs(deps.config);
    const put = (id: string, heartbeat_at: number, extra = {}) =>
      deps.kv.set(instanceKey(id), {
        started_at: 0,
        heartbeat_at,
        ...extra,
      });
    await put("old", stale - 5_000);
    await put("a", clock.t - 3_000, { role: "media", draining: true });
    await put("recent-stale", stale);
    await put("b", clock.t - 1_000, { sfu: true, render: { free: 1, max: 2 } });
    const all = await listInstances(deps, OPERATOR);
    assert.deepEqual(all.map((i) => [i.id, i.live]), [
      ["b", true],
      ["a", true],
      ["recent-stale", false],
      ["old", false],
    ]);
    assert.deepEqual(all[0], {
      id: "b",
      role: "all",
      started_at: 0,
      heartbeat_at: clock.t - 1_000,
      live: true,
      render: { free: 1, max: 2 },
      sfu: true,
      draining: false,
    });
    assert.equal(all[1].draining, true);
    assert.deepEqual(await listInstances(deps, { tenantId: "acme" }), []);
  } finally {
    await app.close();
  }
});

Deno.test("sessionHolder() gives the operator the owner's record (null when gone), a tenant nothing", async () => {
  const clock = new TestClock();
  const app = await testApp(CONTROL, { clock });
  try {
    const deps = app.app.deps;
    await deps.kv.set(instanceKey("n1"), {
      started_at: 0,
      heartbeat_at: clock.t,
      url: "https://n1.example",
      role: "media",
    });
    const held = await sessionHolder(deps, OPERATOR, "n1");
    assert.equal(held?.id, "n1");
    assert.equal(held?.instance?.url, "https://n1.example");
    assert.equal(held?.instance?.live, true);
    assert.deepEqual(await sessionHolder(deps, OPERATOR, "gone"), {
      id: "gone",
      instance: null,
    });
    assert.equal(await sessionHolder(deps, { tenantId: "acme" }, "n1"), null);
  } finally {
    await app.close();
  }
});
