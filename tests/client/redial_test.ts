/** client/redial.ts: when the browser client dials its media socket again. */
import assert from "node:assert/strict";
import { Redial } from "../../client/redial.ts";

Deno.test("Redial dials after the delay asked, one pending dial at a time", async () => {
  const redial = new Redial(8);
  const dialed: string[] = [];
  const { promise, resolve } = Promise.withResolvers<void>();
  assert.equal(redial.schedule(1_000, () => dialed.push("first")), true);
  // A newer schedule replaces the pending one.
  assert.equal(
    redial.schedule(0, () => (dialed.push("second"), resolve())),
    true,
  );
  await promise;
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(dialed, ["second"]);
  redial.cancel();
});

Deno.test("Redial refuses once `max` dials failed since media last played; playing starts over", () => {
  const redial = new Redial(3);
  for (let i = 0; i < 3; i++) {
    assert.equal(redial.schedule(60_000, () => {}), true);
    redial.begin();
  }
  assert.equal(redial.schedule(0, () => assert.fail("dialed past max")), false);
  assert.equal(redial.total, 3);
  redial.playing();
  assert.equal(redial.schedule(60_000, () => {}), true);
  redial.begin();
  assert.equal(redial.total, 4, "every dial counts in stats.reconnects");
  redial.cancel();
});

Deno.test("Redial's backoff doubles from 500 ms per failed dial, ±20 %, at most 30 s", () => {
  const redial = new Redial(100);
  const bounds = (ms: number) => [ms * 0.8, ms * 1.2];
  for (
    const [dials, base] of [[1, 1_000], [2, 2_000], [3, 4_000], [10, 30_000]]
  ) {
    while (redial.total < dials) redial.begin();
    const [lo, hi] = bounds(base);
    for (let i = 0; i < 50; i++) {
      const ms = redial.backoffMs();
      assert.ok(ms >= lo && ms <= hi, `${dials} dials: ${ms} ms`);
    }
  }
});
