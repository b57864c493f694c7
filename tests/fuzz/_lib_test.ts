import assert from "node:assert/strict";
import {
  assertClean,
  createSession,
  ecepCreateBody,
  emptyReport,
  FUZZ_ENGINE_KEY,
  garbageValue,
  mintKey,
  Rng,
  startService,
  stopService,
  withBystander,
} from "../../fuzz/_lib.ts";
import { startEcepFake } from "../fakes/ecep_engine_fake.ts";
import { connectActive } from "../lib/media/_live.ts";

Deno.test("Rng gives the same sequence for the same seed, another for another", () => {
  const a = new Rng(42), b = new Rng(42), c = new Rng(43);
  const seq = (r: Rng) => Array.from({ length: 8 }, () => r.int(0, 1000));
  const sa = seq(a);
  assert.deepEqual(sa, seq(b));
  assert.notDeepEqual(sa, seq(c));
  const g1 = JSON.stringify(garbageValue(new Rng(7)));
  assert.equal(g1, JSON.stringify(garbageValue(new Rng(7))));
});

Deno.test("the harness sees a bystander stream, and counts a killed service as a death", async () => {
  const svc = await startService();
  try {
    const quiet = emptyReport("harness");
    await withBystander(svc, quiet, async () => {
      await new Promise((r) => setTimeout(r, 1500));
    });
    assert.equal(quiet.bystanderStreamed, true);
    assert.equal(quiet.deaths, 0);

    const killed = emptyReport("harness");
    await withBystander(svc, killed, async () => {
      Deno.kill(svc.pid()!, "SIGKILL");
      while (svc.alive()) await new Promise((r) => setTimeout(r, 20));
      await svc.ensureAlive();
      await new Promise((r) => setTimeout(r, 3600));
    });
    assert.equal(killed.deaths, 1);
    assert.equal(killed.bystanderStreamed, false);
    assert.equal(await svc.healthy(), true);
  } finally {
    assert.deepEqual(await svc.stop(), []);
  }
});

Deno.test("stopService() kills a service still running past its deadline after SIGTERM and counts it as a hang", async () => {
  const engine = startEcepFake({ key: FUZZ_ENGINE_KEY, stubborn: true });
  // Its shutdown waits up to a minute for an engine that never closes on session.end.
  const svc = await startService({ END_CLEANUP_TIMEOUT_MS: "60000" });
  try {
    const key = await mintKey(svc, "fuzz-stop");
    const c = await createSession(svc, key, ecepCreateBody(engine.url));
    const browser = await connectActive(svc, c.session_id, c.client_token);
    const report = emptyReport("harness");
    await stopService(svc, report, 1000);
    assert.equal(report.hangs, 1);
    assert.deepEqual(report.findings, [
      "the service did not exit within 1 s of SIGTERM (killed)",
    ]);
    assert.equal(svc.alive(), false);
    assert.throws(() => assertClean({ ...report, cases: 1 }, 1), /hangs":1/);
    browser.close();
  } finally {
    await svc.stop();
    await engine.close();
  }
});

Deno.test("assertClean() passes a clean report and refuses a death, a 5xx, a hang, a stalled bystander or missing cases", () => {
  const clean = { ...emptyReport("t"), cases: 3, bystanderStreamed: true };
  assertClean(clean, 3);
  for (
    const bad of [
      { deaths: 1 },
      { fivexx: 1 },
      { hangs: 1 },
      { bystanderStreamed: false },
      { cases: 2 },
    ]
  ) {
    assert.throws(() => assertClean({ ...clean, ...bad }, 3), /^Error: t: /);
  }
});
