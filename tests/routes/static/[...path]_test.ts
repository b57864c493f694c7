import assert from "node:assert/strict";
import {
  BUNDLE_PATH,
  ensureIslandsBuilt,
} from "../../../lib/console/bundle.ts";
import { ISLANDS } from "../../../lib/console/islands_registry.ts";
import { testApp } from "../../_helpers.ts";

Deno.test("static route serves the stylesheet with its type and an ETag", async () => {
  const app = await testApp();
  try {
    const res = await app.request("/static/console.css");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/css; charset=utf-8");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    const etag = res.headers.get("etag")!;
    assert.match(await res.text(), /--accent/);
    const again = await app.request("/static/console.css", {
      headers: { "if-none-match": etag },
    });
    assert.equal(again.status, 304);
  } finally {
    await app.close();
  }
});

Deno.test("static route refuses traversal, unknown types and missing files", async (t) => {
  const app = await testApp();
  try {
    for (
      const path of [
        "/static/../deno.json",
        "/static/%2e%2e/deno.json",
        "/static/build/..%2fclient.js",
        "/static/console.txt",
        "/static/missing.css",
        "/static/build",
      ]
    ) {
      await t.step(path, async () => {
        const res = await app.request(path);
        assert.equal(res.status, 404);
        await res.body?.cancel();
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("ensureIslandsBuilt() bundles the islands once and the app serves the bundle", async () => {
  await ensureIslandsBuilt();
  assert.equal(
    await ensureIslandsBuilt(),
    false,
    "cached while sources are unchanged",
  );
  const app = await testApp();
  try {
    const res = await app.request("/static/build/client.js");
    assert.equal(res.status, 200);
    assert.equal(
      res.headers.get("content-type"),
      "text/javascript; charset=utf-8",
    );
    const js = await res.text();
    assert.equal(js, await Deno.readTextFile(BUNDLE_PATH));
    assert.match(js, /data-island|dataset/);
    // The chunks it imports are served beside it: the WebAssembly Opus decoder only
    // on demand (a dynamic import), never inlined in client.js.
    const chunks = [...js.matchAll(/import\(?"\.\/([^"]+\.js)"/g)].map((m) =>
      m[1]
    );
    assert.ok(chunks.some((c) => /^wasm_opus-/.test(c)), chunks.join());
    assert.match(js, /import\("\.\/wasm_opus-[A-Z0-9]+\.js"\)/);
    for (const chunk of chunks) {
      const r = await app.request(`/static/build/${chunk}`);
      assert.equal(r.status, 200, chunk);
      await r.body?.cancel();
    }
  } finally {
    await app.close();
  }
});

Deno.test("every module under islands/ is registered for hydration under its own name", async () => {
  const files: string[] = [];
  for await (
    const e of Deno.readDir(new URL("../../../islands/", import.meta.url))
  ) {
    if (e.isFile && e.name.endsWith(".tsx")) files.push(e.name.slice(0, -4));
  }
  assert.deepEqual(Object.keys(ISLANDS).sort(), files.sort());
  for (const [name, component] of Object.entries(ISLANDS)) {
    assert.equal(component.name, name);
  }
});
