/**
 * Every KV operation counted and timed (lib/kv/metered.ts): by kind, the first part of
 * its key and its result; a commit whose check failed is a conflict; the handle works
 * as before.
 */
import assert from "node:assert/strict";
import { type KvMeter, meteredKv, prefixOf } from "../../../lib/kv/metered.ts";

function recorder() {
  const ops: string[] = [];
  const meter: KvMeter = {
    kvOp(op, prefix, result, seconds) {
      assert.ok(seconds === null || seconds >= 0);
      ops.push(
        `${op} ${prefix} ${result}${seconds === null ? " untimed" : ""}`,
      );
    },
  };
  return { ops, meter };
}

Deno.test("meteredKv counts each operation by kind, key prefix and result, and still does it", async () => {
  const raw = await Deno.openKv(":memory:");
  const { ops, meter } = recorder();
  const kv = meteredKv(raw, meter);
  try {
    await kv.set(["sessions", "a"], 1);
    assert.equal((await kv.get(["sessions", "a"])).value, 1);
    await kv.getMany([["usage", "x"], ["sessions", "a"]]);
    const listed = [];
    for await (const e of kv.list({ prefix: ["sessions"] })) listed.push(e);
    assert.equal(listed.length, 1);
    const entry = await kv.get(["sessions", "a"]);
    const ok = await kv.atomic().check(entry).set(["sessions", "a"], 2)
      .commit();
    assert.equal(ok.ok, true);
    // The same stale entry again: its check fails.
    const stale = await kv.atomic().check(entry).set(["sessions", "a"], 3)
      .commit();
    assert.equal(stale.ok, false);
    await kv.atomic().sum(["usage", "n"], 1n).commit();
    await kv.delete([42, "not one of ours"]);
    assert.equal((await raw.get(["sessions", "a"])).value, 2);
    // A failing operation: a closed handle.
    raw.close();
    await assert.rejects(kv.get(["instances", "i"]));
  } finally {
    try {
      raw.close();
    } catch { /* closed */ }
  }
  assert.deepEqual(ops, [
    "set sessions ok",
    "get sessions ok",
    "get_many usage ok",
    "list sessions ok untimed",
    "get sessions ok",
    "commit sessions ok",
    "commit sessions conflict",
    "commit usage ok",
    "delete other ok",
    "get instances error",
  ]);
});

Deno.test("prefixOf: a fixed lower-case name of ours, else other", () => {
  assert.equal(prefixOf(["webhook_events", "e1"]), "webhook_events");
  assert.equal(prefixOf([1n]), "other");
  assert.equal(prefixOf(["Sessions"]), "other");
  assert.equal(prefixOf([]), "other");
  assert.equal(prefixOf(undefined), "other");
});
