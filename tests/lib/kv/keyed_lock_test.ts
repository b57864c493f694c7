import assert from "node:assert/strict";
import { KeyedLock } from "../../../lib/kv/keyed_lock.ts";

Deno.test("KeyedLock.run() serialises work per key and not across keys", async () => {
  const lock = new KeyedLock();
  const order: string[] = [];
  let inside = 0;
  let maxInside = 0;
  const work = (key: string, tag: string, ms: number) =>
    lock.run(key, async () => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      order.push(`${tag}:start`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`${tag}:end`);
      inside--;
      return tag;
    });
  const results = await Promise.all([
    work("a", "a1", 20),
    work("a", "a2", 1),
    work("b", "b1", 5),
  ]);
  assert.deepEqual(results, ["a1", "a2", "b1"]);
  assert.ok(
    order.indexOf("a1:end") < order.indexOf("a2:start"),
    order.join(","),
  );
  assert.ok(
    order.indexOf("b1:start") < order.indexOf("a1:end"),
    "b does not wait for a",
  );
  assert.equal(maxInside, 2);
  assert.equal(lock.size, 0);
});

Deno.test("KeyedLock.run() releases the key when the work throws", async () => {
  const lock = new KeyedLock();
  await assert.rejects(
    lock.run("k", () => Promise.reject(new Error("boom"))),
    /boom/,
  );
  assert.equal(await lock.run("k", () => Promise.resolve(7)), 7);
  assert.equal(lock.size, 0);
});
