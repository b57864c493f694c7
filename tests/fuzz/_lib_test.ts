import assert from "node:assert/strict";
import {
  assertClean,
  emptyReport,
  garbageValue,
  Rng,
  startService,
  withBystander,
} from "../../fuzz/_lib.ts";

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
    await svc.stop();
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
