import assert from "node:assert/strict";
import { ApiError } from "../../../lib/errors.ts";
import {
  KV_GET_MANY_MAX,
  KvReadBatcher,
  kvReadBatcher,
} from "../../../lib/kv/batch.ts";

/**
 * A real in-memory KV whose `getMany` records the keys of each call and, while `hold`
 * is set, answers only once it is released (the read itself is done at call time).
 */
async function spyKv() {
  const kv = await Deno.openKv(":memory:");
  const calls: Deno.KvKey[][] = [];
  let gate: Promise<void> | null = null;
  let open = () => {};
  let failNext: Error | null = null;
  const spy = new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany") {
        return async (keys: Deno.KvKey[]) => {
          calls.push(keys);
          if (failNext) {
            const err = failNext;
            failNext = null;
            throw err;
          }
          const entries = await target.getMany(keys);
          if (gate) await gate;
          return entries;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    kv,
    spy,
    calls,
    hold() {
      gate = new Promise((r) => open = r);
    },
    release() {
      gate = null;
      open();
    },
    failNext(err: Error) {
      failNext = err;
    },
  };
}

/** Lets pending promise callbacks run. */
const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("KvReadBatcher", async (t) => {
  await t.step("a read with nothing in flight goes to KV at once", async () => {
    const s = await spyKv();
    await s.kv.set(["a"], 1);
    const b = new KvReadBatcher(s.spy);
    const p = b.getMany([["a"], ["b"]]);
    assert.deepEqual(s.calls, [[["a"], ["b"]]]);
    const got = await p;
    assert.deepEqual(got.map((e) => e.value), [1, null]);
    assert.deepEqual(got.map((e) => e.key), [["a"], ["b"]]);
    s.kv.close();
  });

  await t.step(
    "reads arriving while a batch is in flight share the next getMany, in order",
    async () => {
      const s = await spyKv();
      for (let i = 0; i < 6; i++) await s.kv.set(["k", i], `v${i}`);
      const b = new KvReadBatcher(s.spy);
      s.hold();
      const first = b.getMany([["k", 0]]);
      const rest = [1, 2, 3].map((i) => b.getMany([["k", i], ["k", i + 2]]));
      await tick();
      assert.equal(
        s.calls.length,
        1,
        "the others wait for the batch in flight",
      );
      s.release();
      assert.deepEqual((await first).map((e) => e.value), ["v0"]);
      const got = await Promise.all(rest);
      assert.deepEqual(got.map((es) => es.map((e) => e.value)), [
        ["v1", "v3"],
        ["v2", "v4"],
        ["v3", "v5"],
      ]);
      // One more round trip for all three, each distinct key read once.
      assert.equal(s.calls.length, 2);
      assert.deepEqual(s.calls[1], [
        ["k", 1],
        ["k", 3],
        ["k", 2],
        ["k", 4],
        ["k", 5],
      ]);
      assert.deepEqual(b.stats, { reads: 4, roundTrips: 2 });
      s.kv.close();
    },
  );

  await t.step(
    "a batch holds at most KV_GET_MANY_MAX distinct keys; the rest go next",
    async () => {
      const s = await spyKv();
      const b = new KvReadBatcher(s.spy);
      s.hold();
      const first = b.getMany([["x"]]);
      // Ten reads of 2 keys, one of them shared by all (like an API key).
      const reads = Array.from(
        { length: 10 },
        (_, i) => b.getMany([["key"], ["s", i]]),
      );
      await tick();
      s.release();
      await first;
      await Promise.all(reads);
      assert.deepEqual(s.calls.map((c) => c.length), [1, 10, 2]);
      for (const c of s.calls) assert.ok(c.length <= KV_GET_MANY_MAX);
      // Reads are never split across round trips.
      assert.deepEqual(s.calls[1].slice(0, 3), [["key"], ["s", 0], ["s", 1]]);
      assert.deepEqual(s.calls[2], [["key"], ["s", 9]]);
      s.kv.close();
    },
  );

  await t.step(
    "a read asked for after a write sees it, even with a batch in flight",
    async () => {
      const s = await spyKv();
      await s.kv.set(["rev"], "valid");
      const b = new KvReadBatcher(s.spy);
      s.hold();
      const before = b.getMany([["rev"]]);
      await tick();
      // Revoke while the first read (already taken) waits to be answered.
      await s.kv.set(["rev"], "revoked");
      const after = b.getMany([["rev"]]);
      s.release();
      assert.equal((await before)[0].value, "valid");
      assert.equal((await after)[0].value, "revoked");
      s.kv.close();
    },
  );

  await t.step(
    "a failed round trip rejects its reads and those queued behind it with 503; later reads run",
    async () => {
      const s = await spyKv();
      await s.kv.set(["ok"], 1);
      const b = new KvReadBatcher(s.spy);
      s.failNext(new Error("disk I/O error"));
      const failed = b.getMany([["a"]]);
      const queued = b.getMany([["ok"]]);
      for (const p of [failed, queued]) {
        await assert.rejects(p, (err: unknown) => {
          assert.ok(err instanceof ApiError);
          assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
          return true;
        });
      }
      assert.equal(s.calls.length, 1);
      assert.equal((await b.getMany([["ok"]]))[0].value, 1);
      s.kv.close();
    },
  );

  await t.step(
    "a stalled round trip fails every read queued behind it at once, with no round trip of their own",
    async () => {
      const kv = await Deno.openKv(":memory:");
      const calls: Deno.KvKey[][] = [];
      // A KV whose getMany never answers (a stalled store).
      const stalled = new Proxy(kv, {
        get(target, prop) {
          if (prop === "getMany") {
            return (keys: Deno.KvKey[]) => {
              calls.push(keys);
              return new Promise(() => {});
            };
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const b = new KvReadBatcher(stalled, { timeoutMs: 50 });
      // 50 concurrent reads of distinct keys: five batches' worth.
      const reads = Array.from(
        { length: 50 },
        (_, i) =>
          b.getMany([["k", i]]).then(
            () => "resolved",
            (err: unknown) => err instanceof ApiError ? err.code : String(err),
          ),
      );
      const outcomes = await Promise.all(reads);
      assert.deepEqual(
        new Set(outcomes),
        new Set(["AVTR_SESSION_STATE_UNAVAILABLE"]),
      );
      // Queued reads did not each wait for a round trip (and its timeout) of their own.
      assert.equal(calls.length, 1);
      assert.equal(b.stats.roundTrips, 1);
      kv.close();
    },
  );

  await t.step(
    "a read whose deadline passed while it was queued fails without a round trip",
    async () => {
      const s = await spyKv();
      await s.kv.set(["late"], "value");
      let now = 0;
      const b = new KvReadBatcher(s.spy, {
        timeoutMs: 60_000,
        now: () => now,
      });
      s.hold();
      const first = b.getMany([["a"]]);
      const queued = b.getMany([["late"]]);
      await tick();
      // The first round trip answers just inside its deadline; the queued read, asked
      // at the same time, has nothing left of its own.
      now = 60_000;
      s.release();
      assert.equal((await first)[0].value, null);
      await assert.rejects(queued, (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
        return true;
      });
      assert.equal(s.calls.length, 1, "no round trip for an expired read");
      // A read asked now has a whole deadline of its own.
      assert.equal((await b.getMany([["late"]]))[0].value, "value");
      s.kv.close();
    },
  );

  await t.step("a stalled round trip times out as 503", async () => {
    const s = await spyKv();
    const b = new KvReadBatcher(s.spy, { timeoutMs: 10 });
    s.hold();
    await assert.rejects(b.getMany([["a"]]), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
      return true;
    });
    s.release();
    await tick();
    s.kv.close();
  });

  await t.step(
    "keys with byte parts are read per caller; empty reads cost nothing",
    async () => {
      const s = await spyKv();
      const bytes = new Uint8Array([1, 2]);
      await s.kv.set(["b", bytes], "x");
      const b = new KvReadBatcher(s.spy);
      assert.deepEqual(await b.getMany([]), []);
      assert.equal(s.calls.length, 0);
      s.hold();
      const first = b.getMany([["y"]]);
      const r1 = b.getMany([["b", bytes]]);
      const r2 = b.getMany([["b", bytes]]);
      await tick();
      s.release();
      await first;
      assert.equal((await r1)[0].value, "x");
      assert.equal((await r2)[0].value, "x");
      assert.equal(s.calls[1].length, 2);
      s.kv.close();
    },
  );

  await t.step(
    "keys of different types never share a slot",
    async () => {
      const s = await spyKv();
      await s.kv.set(["n", 1], "number");
      await s.kv.set(["n", "1"], "string");
      await s.kv.set(["n", 1n], "bigint");
      const b = new KvReadBatcher(s.spy);
      s.hold();
      const first = b.getMany([["z"]]);
      const reads = [
        b.getMany([["n", 1]]),
        b.getMany([["n", "1"]]),
        b.getMany([
          ["n", 1n],
        ]),
      ];
      await tick();
      s.release();
      await first;
      const got = await Promise.all(reads);
      assert.deepEqual(got.map((es) => es[0].value), [
        "number",
        "string",
        "bigint",
      ]);
      s.kv.close();
    },
  );

  await t.step(
    "more keys than one getMany takes is KV's own error",
    async () => {
      const s = await spyKv();
      const b = new KvReadBatcher(s.spy);
      const keys = Array.from(
        { length: KV_GET_MANY_MAX + 1 },
        (_, i) => ["k", i],
      );
      await assert.rejects(b.getMany(keys), ApiError);
      s.kv.close();
    },
  );

  await t.step("kvReadBatcher keeps one batcher per KV handle", async () => {
    const kv = await Deno.openKv(":memory:");
    assert.equal(kvReadBatcher(kv), kvReadBatcher(kv));
    kv.close();
  });
});
