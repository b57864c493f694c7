import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ApiError } from "../../../lib/errors.ts";
import {
  KvBudget,
  kvTry,
  LOCK_RETRY_MS,
  openKv,
  withLockRetry,
} from "../../../lib/kv/store.ts";

const STORE = new URL("../../../lib/kv/store.ts", import.meta.url).href;

Deno.test("openKv() on a shared file retries writes another process holds the lock for", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/shared.sqlite`;
  const n = 200;
  // The same workload in a second process, through the same wrapper.
  const script = `
    import { openKv } from ${JSON.stringify(STORE)};
    const kv = await openKv(${JSON.stringify(path)});
    for (let i = 0; i < ${n}; i++) {
      for (;;) {
        const e = await kv.get(["k"]);
        const r = await kv.atomic().check(e).set(["k"], i).sum(["n"], 1n).commit();
        if (r.ok) break;
      }
    }
    kv.close();`;
  const kv = await openKv(path);
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", "--unstable-kv", script],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    for (let i = 0; i < n; i++) {
      for (;;) {
        const e = await kv.get(["k"]);
        const r = await kv.atomic().check(e).set(["k"], -i).sum(["n"], 1n)
          .commit();
        if (r.ok) break;
      }
      await kv.set(["plain", i % 5], i);
    }
    const out = await child.output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.equal((await kv.get<Deno.KvU64>(["n"])).value?.value, BigInt(2 * n));
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kvTry() turns a store failure or stall into 503 AVTR_SESSION_STATE_UNAVAILABLE", async (t) => {
  await t.step("rejection", async () => {
    const err = await kvTry(Promise.reject(new Error("disk gone"))).catch((e) =>
      e
    );
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
    assert.equal(err.status, 503);
    assert.ok(err.retryAfter! >= 1);
    assert.equal(
      err.message.includes("disk"),
      false,
      "the cause stays out of the message",
    );
  });
  await t.step("stall", async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const never = new Promise<void>((r) => timer = setTimeout(r, 10_000));
    const err = await kvTry(never, 20).catch((e) => e);
    clearTimeout(timer);
    assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
  });
  await t.step("ApiErrors pass through", async () => {
    const err = await kvTry(
      Promise.reject(new ApiError("AVTR_SESSION_NOT_FOUND", "x")),
    ).catch((
      e,
    ) => e);
    assert.equal(err.code, "AVTR_SESSION_NOT_FOUND");
  });
});

Deno.test("kvTry() with a KvBudget: each operation waits only what the earlier ones left; a spent budget refuses without starting one", async () => {
  const budget = new KvBudget(30);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const never = new Promise<void>((r) => timer = setTimeout(r, 10_000));
  const first = await kvTry(never, budget).catch((e) => e);
  clearTimeout(timer);
  assert.equal(first.code, "AVTR_SESSION_STATE_UNAVAILABLE");
  assert.ok(budget.leftMs <= 0, "the stall spent the budget");
  let started = false;
  const second = await kvTry(() => {
    started = true;
    return Promise.resolve(1);
  }, budget).catch((e) => e);
  assert.equal(second.code, "AVTR_SESSION_STATE_UNAVAILABLE");
  assert.equal(started, false, "no operation started on a spent budget");
});

Deno.test("a write kvTry() gave up on starts no new attempt on a locked file: nothing lands once the lock goes", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const kv = await openKv(path);
  await kv.set(["warm"], 1);
  const lock = new DatabaseSync(path);
  let locked = true;
  try {
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("BEGIN EXCLUSIVE");
    const err = await kvTry(() => kv.set(["late"], 1), 50).catch((e) => e);
    assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
    // The handle runs its operations in order: this read answers once the attempt under
    // way has failed on the lock (SQLite's busy wait), before a retry could start.
    assert.equal((await kv.get(["late"])).versionstamp, null);
    lock.exec("COMMIT");
    locked = false;
    await new Promise((r) => setTimeout(r, 200));
    await kv.set(["probe"], 1);
    assert.equal((await kv.get(["late"])).versionstamp, null, "never landed");
  } finally {
    if (locked) lock.exec("COMMIT");
    lock.close();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a commit waits out another process's write lock held 1.5 s, within its KV time, whether kvTry got the promise or the function", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const kv = await openKv(path);
  await kv.set(["warm"], 1);
  const lock = new DatabaseSync(path);
  try {
    for (const form of ["promise", "function"] as const) {
      lock.exec("PRAGMA busy_timeout = 0");
      lock.exec("BEGIN EXCLUSIVE");
      const released = new Promise<void>((r) =>
        setTimeout(() => (lock.exec("COMMIT"), r()), 1500)
      );
      const t0 = performance.now();
      const commit = () => kv.atomic().set(["big", form], 1).commit();
      const res = await (form === "promise" ? kvTry(commit()) : kvTry(commit));
      await released;
      assert.equal(res.ok, true, form);
      assert.ok(performance.now() - t0 >= 1400, `${form}: waited for the lock`);
      assert.equal((await kv.get(["big", form])).value, 1);
    }
  } finally {
    lock.close();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a commit refused as locked at once, 150 times in a row (a busy machine), still lands: the retries are bounded in time, not in count", async () => {
  let refusals = 150;
  let attempts = 0;
  const fake = {
    atomic: () => ({
      set() {
        return this;
      },
      commit: () => {
        attempts++;
        return refusals-- > 0
          ? Promise.reject(new Error("database is locked"))
          : Promise.resolve({ ok: true, versionstamp: "1" });
      },
    }),
  } as unknown as Deno.Kv;
  const kv = withLockRetry(fake);
  const t0 = performance.now();
  const res = await kvTry(kv.atomic().set(["k"], 1).commit());
  assert.equal(res.ok, true);
  assert.equal(attempts, 151);
  assert.ok(performance.now() - t0 < LOCK_RETRY_MS);

  // A lock that never goes: refused after the bound, with SQLite's own error.
  refusals = Infinity;
  const err = await kv.atomic().set(["k"], 1).commit().catch((e) => e);
  assert.match(String(err), /database is locked/);
});
