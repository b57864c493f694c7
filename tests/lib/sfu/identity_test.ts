import assert from "node:assert/strict";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { sfuIdentity } from "../../../lib/sfu/identity.ts";

const URL_A = "http://127.0.0.1:8088/janus";
const KEY_A = "k".repeat(32);

Deno.test("sfuIdentity() is short and stable, tells two Janus apart by URL or key", async () => {
  const id = await sfuIdentity({ url: URL_A, apiKey: KEY_A });
  assert.match(id, /^[A-Za-z0-9_-]{22}$/);
  assert.equal(await sfuIdentity({ url: URL_A, apiKey: KEY_A }), id);
  // Two nodes, each with its own Janus on the same loopback URL: fresh keys differ.
  assert.notEqual(
    await sfuIdentity({ url: URL_A, apiKey: "j".repeat(32) }),
    id,
  );
  assert.notEqual(
    await sfuIdentity({ url: "http://10.0.0.20:8088/janus", apiKey: KEY_A }),
    id,
  );
  // One URL spelt two ways that URL parsing makes one.
  assert.equal(
    await sfuIdentity({ url: "HTTP://127.0.0.1:8088/janus", apiKey: KEY_A }),
    id,
  );
});

Deno.test("createDeps() derives sfuId from SFU_URL and SFU_API_KEY, null without an SFU", async () => {
  const base = { KV_PATH: ":memory:", TOKEN_SECRET: "t".repeat(40) };
  const sfuEnv = { SFU_URL: URL_A, SFU_API_KEY: KEY_A, SFU_API_SECRET: "s" };
  const withSfu = await createDeps({
    env: { ...base, ...sfuEnv },
    log: memoryLogger(),
  });
  const without = await createDeps({ env: base, log: memoryLogger() });
  try {
    assert.equal(
      withSfu.sfuId,
      await sfuIdentity({ url: URL_A, apiKey: KEY_A }),
    );
    assert.equal(without.sfuId, null);
  } finally {
    await closeDeps(withSfu);
    await closeDeps(without);
  }
});
