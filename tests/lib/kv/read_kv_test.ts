import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { openKv, openReadKv } from "../../../lib/kv/store.ts";
import { authJson, TEST_ADMIN_KEY, TEST_TOKEN_SECRET } from "../../_helpers.ts";
import { validBody } from "../../routes/v1/sessions/_helpers.ts";

/** Settles with `p`'s value, or with `fallback` when `p` takes longer than `ms`. */
function within<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<F>((r) => timer = setTimeout(() => r(fallback), ms)),
  ]).finally(() => clearTimeout(timer));
}

Deno.test("a status read answers while a commit waits for another process's write lock on the KV file", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const app = await createApp({
    env: {
      KV_PATH: path,
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
    },
    log: memoryLogger(),
  });
  let lock: DatabaseSync | undefined;
  try {
    const call = (path: string, init: RequestInit = {}) =>
      app.handler(new Request(`http://localhost${path}`, init));
    const minted = await call("/v1/api-keys", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify({ tenant_id: "t1", scopes: ["sessions:read"] }),
    });
    const { api_key: key } = await minted.json();
    const created = await call("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify(validBody()),
    });
    assert.equal(created.status, 200);
    const { session_id: id } = await created.json();
    const read = () =>
      call(`/v1/sessions/${id}`, { headers: authJson(key) }).then(
        async (res) => {
          await res.body?.cancel();
          return res.status;
        },
      );
    assert.equal(await read(), 404, "another tenant's key: warm, and 404");

    // Another process (here: a plain SQLite connection) takes the write lock, and a
    // commit of the service starts waiting for it.
    lock = new DatabaseSync(path);
    lock.exec("BEGIN IMMEDIATE");
    let committed = false;
    const commit = app.deps.kv.set(["probe"], 1).then(() => committed = true);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(committed, false, "the commit waits for the lock");

    // The request path reads on its own handle: it answers with the lock still held.
    // (On the committing handle the read would wait until SQLite's busy timeout, about
    // 5 s, failed the commit; a read takes a few ms.)
    const status = await within(read(), 2_000, "still waiting");
    assert.equal(status, 404);
    assert.equal(committed, false, "answered before the lock was released");

    lock.exec("COMMIT");
    lock.close();
    lock = undefined;
    await commit;
  } finally {
    if (lock) {
      lock.exec("COMMIT");
      lock.close();
    }
    await app.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the read handle sees every commit of the write handle as soon as it returns", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const kv = await openKv(path);
  const readKv = await openReadKv(path, kv);
  try {
    assert.notEqual(readKv, kv, "a local file gets a second handle");
    for (let i = 0; i < 300; i++) {
      const res = await kv.atomic().set(["k"], i).sum(["n"], 1n).commit();
      assert.ok(res.ok);
      const [k, n] = await readKv.getMany<[number, Deno.KvU64]>([["k"], ["n"]]);
      assert.equal(k.value, i);
      assert.equal(k.versionstamp, res.versionstamp);
      assert.equal(n.value?.value, BigInt(i + 1));
    }
  } finally {
    readKv.close();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openReadKv() shares the handle where a second one would be another store or gain nothing", async () => {
  const mem = await openKv(":memory:");
  try {
    assert.equal(await openReadKv(":memory:", mem), mem);
    assert.equal(await openReadKv("https://kv.example.com/db", mem), mem);
    assert.equal(await openReadKv(undefined, mem), mem);
  } finally {
    mem.close();
  }
});
