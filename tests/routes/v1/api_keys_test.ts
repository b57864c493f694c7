/**
 * /v1/api-keys as the operator uses it: mint (201, the plaintext once), bad fields (400),
 * revoke (204, idempotent), a revocation across instances, and use written without a
 * commit per request. Who may mint and revoke what: api_keys_auth_test.ts.
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import {
  authJson,
  TEST_ADMIN_KEY,
  TEST_TOKEN_SECRET,
  testApp,
  TestClock,
} from "../../_helpers.ts";
import { assertError, del, mint } from "./_api_keys.ts";

Deno.test("POST /v1/api-keys answers 201 with the plaintext key once, in both header forms", async (t) => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  try {
    await t.step("Authorization: Bearer", async () => {
      const res = await app.request("/v1/api-keys", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify({
          tenant_id: "acme",
          scopes: ["sessions:write", "sessions:read"],
          name: "backend",
          expires_at: clock.t + 86_400_000,
        }),
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get("cache-control"), "no-store");
      const body = await res.json();
      assert.deepEqual(Object.keys(body).sort(), [
        "api_key",
        "created_at",
        "expires_at",
        "key_id",
        "name",
        "scopes",
        "tenant_id",
      ]);
      assert.match(
        body.api_key,
        new RegExp(`^avk_${body.key_id}_[A-Za-z0-9_-]{43}$`),
      );
      assert.equal(body.tenant_id, "acme");
      assert.deepEqual(body.scopes, ["sessions:write", "sessions:read"]);
      assert.equal(body.name, "backend");
      assert.equal(body.created_at, clock.t);
      assert.equal(body.expires_at, clock.t + 86_400_000);

      // The plaintext is nowhere in KV and nowhere in the log.
      const dump: string[] = [];
      for await (const e of app.app.deps.kv.list({ prefix: [] })) {
        dump.push(
          JSON.stringify(e, (_k, v) => typeof v === "bigint" ? String(v) : v),
        );
      }
      const secret = body.api_key.slice(-43);
      assert.equal(dump.join("\n").includes(secret), false);
      assert.equal(app.log.lines.join("\n").includes(secret), false);
    });
    await t.step("x-api-key, optional fields absent", async () => {
      const res = await app.request("/v1/api-keys", {
        method: "POST",
        headers: {
          "x-api-key": TEST_ADMIN_KEY,
          "content-type": "application/json",
        },
        body: JSON.stringify({ tenant_id: "acme", scopes: ["keys:admin"] }),
      });
      assert.equal(res.status, 201);
      const body = await res.json();
      assert.equal("name" in body, false);
      assert.equal("expires_at" in body, false);
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/api-keys answers 400 AVTR_REQUEST_INVALID with param for each bad field", async (t) => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  const ok = { tenant_id: "acme", scopes: ["sessions:read"] };
  const cases: [string, unknown, string | undefined][] = [
    ["tenant_id missing", { scopes: ["sessions:read"] }, "tenant_id"],
    [
      "tenant_id bad characters",
      { ...ok, tenant_id: "acme/../x" },
      "tenant_id",
    ],
    ["tenant_id too long", { ...ok, tenant_id: "t".repeat(65) }, "tenant_id"],
    ["scopes empty", { ...ok, scopes: [] }, "scopes"],
    ["scopes unknown", { ...ok, scopes: ["admin"] }, "scopes[0]"],
    [
      "scopes repeated",
      { ...ok, scopes: ["sessions:read", "sessions:read"] },
      "scopes[1]",
    ],
    ["name empty", { ...ok, name: "" }, "name"],
    ["name too long", { ...ok, name: "x".repeat(101) }, "name"],
    ["name not a string", { ...ok, name: 5 }, "name"],
    [
      "expires_at in the past",
      { ...ok, expires_at: clock.t - 1000 },
      "expires_at",
    ],
    ["expires_at not an integer", { ...ok, expires_at: "soon" }, "expires_at"],
    ["unknown field", { ...ok, key_id: "mine" }, "key_id"],
    ["not an object", ["acme"], undefined],
  ];
  try {
    for (const [name, body, param] of cases) {
      await t.step(name, async () => {
        const res = await app.request("/v1/api-keys", {
          method: "POST",
          headers: authJson(TEST_ADMIN_KEY),
          body: JSON.stringify(body),
        });
        await assertError(res, 400, "AVTR_REQUEST_INVALID", param);
      });
    }
    await t.step("malformed JSON", async () => {
      const res = await app.request("/v1/api-keys", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: "{",
      });
      await assertError(res, 400, "AVTR_REQUEST_INVALID");
    });
    await t.step("not JSON", async () => {
      const res = await app.request("/v1/api-keys", {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_ADMIN_KEY}`,
          "content-type": "text/plain",
        },
        body: JSON.stringify(ok),
      });
      await assertError(res, 400, "AVTR_REQUEST_INVALID");
    });
    let count = 0;
    for await (const _ of app.app.deps.kv.list({ prefix: ["api_keys"] })) {
      count++;
    }
    assert.equal(count, 0);
  } finally {
    await app.close();
  }
});

Deno.test("DELETE /v1/api-keys/{key_id} answers 204, 204 again, and 404 AVTR_API_KEY_NOT_FOUND for an unknown key", async () => {
  const app = await testApp();
  try {
    const k = await mint(app, { tenant_id: "acme", scopes: ["sessions:read"] });
    const first = await del(app, k.key_id);
    assert.equal(first.status, 204);
    assert.equal(await first.text(), "");
    const again = await del(app, k.key_id);
    assert.equal(again.status, 204);
    assert.equal(await again.text(), "");
    await assertError(
      await del(app, "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
      404,
      "AVTR_API_KEY_NOT_FOUND",
    );
    await assertError(
      await del(app, "not-a-key-id"),
      404,
      "AVTR_API_KEY_NOT_FOUND",
    );
    const get = await app.request(`/v1/api-keys/${k.key_id}`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "DELETE");
  } finally {
    await app.close();
  }
});

Deno.test("a revocation on one instance holds on the next request to another instance", async () => {
  const kv = await Deno.openKv(":memory:");
  const env = {
    KV_PATH: ":memory:",
    TOKEN_SECRET: TEST_TOKEN_SECRET,
    ADMIN_API_KEY: TEST_ADMIN_KEY,
  };
  const a = await createApp({ env, kv, log: memoryLogger() });
  const b = await createApp({ env, kv, log: memoryLogger() });
  try {
    const created = await a.handler(
      new Request("http://localhost/v1/api-keys", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify({ tenant_id: "ops", scopes: ["keys:admin"] }),
      }),
    );
    const { key_id, api_key } = await created.json();
    const probe = () =>
      b.handler(
        new Request("http://localhost/v1/api-keys/01ARZ3NDEKTSV4RRFFQ69G5FAV", {
          method: "DELETE",
          headers: { "x-api-key": api_key },
        }),
      );
    const before = await probe();
    assert.equal(before.status, 404); // authenticated on b, then no such key
    await before.body?.cancel();
    const revoked = await a.handler(
      new Request(`http://localhost/v1/api-keys/${key_id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      }),
    );
    assert.equal(revoked.status, 204);
    await assertError(await probe(), 401, "AVTR_AUTH_INVALID_KEY");
  } finally {
    await a.close();
    await b.close();
    kv.close();
  }
});

Deno.test("authenticated requests write nothing to the API-key records; use is flushed on close", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = new TestClock();
  const app = await createApp({
    env: {
      KV_PATH: ":memory:",
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
    },
    kv,
    now: clock.now,
    log: memoryLogger(),
  });
  let closed = false;
  try {
    const res = await app.handler(
      new Request("http://localhost/v1/api-keys", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify({ tenant_id: "ops", scopes: ["keys:admin"] }),
      }),
    );
    const { key_id, api_key } = await res.json();
    const snapshot = async () => {
      const out: unknown[] = [];
      for (
        const prefix of [["api_keys"], ["api_keys_by_tenant"], [
          "api_keys_last_used",
        ]]
      ) {
        for await (const e of kv.list({ prefix })) {
          out.push([e.key, e.versionstamp]);
        }
      }
      return out;
    };
    const before = await snapshot();
    clock.advance(5000);
    for (let i = 0; i < 5; i++) {
      // Authenticates, then fails validation: no write of its own.
      const r = await app.handler(
        new Request("http://localhost/v1/api-keys", {
          method: "POST",
          headers: authJson(api_key),
          body: JSON.stringify({}),
        }),
      );
      assert.equal(r.status, 400);
      await r.body?.cancel();
    }
    assert.deepEqual(await snapshot(), before);
    await app.close();
    closed = true;
    const used = await kv.get<Deno.KvU64>(["api_keys_last_used", key_id]);
    assert.equal(Number(used.value!.value), clock.t);
  } finally {
    if (!closed) await app.close();
    kv.close();
  }
});
