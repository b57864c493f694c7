import assert from "node:assert/strict";
import { assertClean } from "../../fuzz/_lib.ts";
import { CaseSource, POISONS } from "../../fuzz/engine_cases.ts";
import { runEngineFuzz } from "../../fuzz/engine.ts";
import { Rng } from "../../fuzz/_lib.ts";
import { startProviderKit } from "../fakes/providers.ts";
import { fieldPaths } from "../fakes/json_paths.ts";

Deno.test("CaseSource is deterministic by seed and sweeps every field of every message type", async () => {
  const kit = startProviderKit("external_engine");
  try {
    const run = (seed: number) => {
      const src = new CaseSource(new Rng(seed), kit, 55);
      return Array.from({ length: 40 }, () => src.next());
    };
    const a = run(3);
    assert.deepEqual(a, run(3));
    assert.notDeepEqual(a, run(4));
    const fields = kit.templates.reduce(
      (n, t) => n + fieldPaths(t.msg).length,
      0,
    );
    const src = new CaseSource(new Rng(1), kit, 55);
    assert.equal(src.sweepLeft, fields * POISONS.length);
    // The first sweep cases put {"toString":0} in each typed field.
    const first = Array.from({ length: 2 * fields }, () => src.next())
      .filter((c) => c.kind === "field sweep")
      .map((c) => c.frames[0] as string);
    assert.ok(
      first.includes('{"type":"response.start","response_id":{"toString":0}}'),
    );
  } finally {
    await kit.fake.close();
  }
});

Deno.test("runEngineFuzz(): a few hundred cases against every provider, nothing breaks", async () => {
  const report = await runEngineFuzz({ cases: 440, seed: 11 });
  assertClean(report, 440);
});
