/**
 * Draining for a restart (`NODE_DRAIN_S`, lib/nodes/drain.ts): after SIGTERM the
 * process takes no new session (503 `AVTR_RENDER_CAPACITY`; a control plane tries its
 * next node), `/readyz` says `draining`, the session it holds keeps streaming, and the
 * process exits by itself once that session ends. In-process: a draining node is left
 * out of the control plane's choice.
 */
import assert from "node:assert/strict";
import { TEST_ADMIN_KEY } from "../../_helpers.ts";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import { startInstance } from "../media/_instance.ts";
import { connectActive } from "../media/_live.ts";
import { announceInstance } from "../../../lib/media/presence.ts";
import { engineBody, startTopology } from "./_topology.ts";

const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

Deno.test("SIGTERM with NODE_DRAIN_S: no new sessions, the held one plays on, and the process exits when it ends", async () => {
  const dir = await Deno.makeTempDir();
  const engine = startEcepFake({ key: "engine-key-3f9a1c7e5b" });
  const inst = await startInstance(`${dir}/kv.sqlite`, {
    NODE_DRAIN_S: "60",
    RENDER_MAX_SESSIONS: "8",
  });
  const create = () =>
    fetch(`${inst.base}/v1/sessions`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(engineBody(engine)),
    });
  try {
    const created = await (await create()).json();
    const browser = await connectActive(
      inst,
      created.session_id,
      created.client_token,
      2,
    );
    inst.child.kill("SIGTERM");
    // Draining: /readyz says so once the signal is handled.
    let ready: Response | undefined;
    for (let i = 0; i < 100; i++) {
      ready = await fetch(`${inst.base}/readyz`);
      if (ready.status === 503) break;
      await ready.body?.cancel();
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(ready?.status, 503);
    assert.equal((await ready!.json()).status, "draining");
    const refused = await create();
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).code, "AVTR_RENDER_CAPACITY");
    // The held session streams on.
    const before = browser.binary.length;
    await browser.until(
      () => browser.binary.length >= before + 10,
      "segments while draining",
    );
    const end = await fetch(
      `${inst.base}/v1/sessions/${created.session_id}/end`,
      { method: "POST", headers: auth },
    );
    assert.equal(end.status, 200);
    await end.body?.cancel();
    // Nothing held: the process stops by itself (bounded, or the test fails).
    const bound = setTimeout(() => inst.child.kill("SIGKILL"), 20_000);
    const status = await inst.child.status;
    clearTimeout(bound);
    assert.equal(status.code, 0, "exited by itself after the drain");
    browser.close();
  } finally {
    await inst.stop("SIGKILL");
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a draining media node is left out: creates go to the other node, and its /readyz says draining", async () => {
  const slots = { RENDER_MAX_SESSIONS: "8" };
  const topo = await startTopology([slots, slots]);
  try {
    const [a, b] = topo.nodes;
    a.app.deps.draining = true;
    await announceInstance(a.app.deps);
    for (let i = 0; i < 4; i++) {
      const res = await topo.create();
      assert.equal(res.status, 200);
      assert.equal(await topo.ownerOf((await res.json()).session_id), b);
    }
    const ready = await fetch(`${a.base}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal((await ready.json()).status, "draining");
  } finally {
    await topo.close();
  }
});
