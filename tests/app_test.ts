import assert from "node:assert/strict";
import { testApp } from "./_helpers.ts";

Deno.test("app answers an unknown /v1/ path with 404 AVTR_NOT_FOUND and echoes X-Request-Id", async () => {
  const t = await testApp();
  try {
    const res = await t.request("/v1/nope", {
      headers: { "x-request-id": "req_abc-1" },
    });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("x-request-id"), "req_abc-1");
    const body = await res.json();
    assert.equal(body.code, "AVTR_NOT_FOUND");
    assert.equal(body.request_id, "req_abc-1");
    assert.match(body.doc_url, /^https:\/\/.+\/errors\/AVTR_NOT_FOUND$/);
    assert.equal("retry_after" in body, false);
  } finally {
    await t.close();
  }
});

Deno.test("app replaces an X-Request-Id that breaks the rule with a UUID", async (t) => {
  const app = await testApp();
  try {
    for (const bad of ["has space", "x".repeat(129), "semi;colon"]) {
      await t.step(JSON.stringify(bad.slice(0, 20)), async () => {
        const res = await app.request("/v1/nope", {
          headers: { "x-request-id": bad },
        });
        const id = res.headers.get("x-request-id")!;
        assert.match(
          id,
          /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        );
        assert.equal((await res.json()).request_id, id);
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("healthz answers ok and readyz reports ready", async () => {
  const t = await testApp();
  try {
    const h = await t.request("/healthz");
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: "ok" });
    const r = await t.request("/readyz");
    assert.equal(r.status, 200);
    assert.equal((await r.json()).status, "ready");
  } finally {
    await t.close();
  }
});

Deno.test("readyz reports not ready when TOKEN_SECRET is shorter than 32 bytes", async () => {
  const t = await testApp({ TOKEN_SECRET: "short" });
  try {
    const r = await t.request("/readyz");
    assert.equal(r.status, 503);
    const body = await r.json();
    assert.equal(body.status, "not_ready");
    assert.equal(body.checks.token_secret, "failing");
  } finally {
    await t.close();
  }
});
