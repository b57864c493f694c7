/**
 * /v1/api-keys and who may use it: a tenant's keys:admin key within its own tenant only
 * (403 to mint, 404 to revoke elsewhere), and every credential that is missing,
 * invalid, revoked, expired or short of keys:admin refused.
 */
import assert from "node:assert/strict";
import { authJson, testApp, TestClock } from "../../_helpers.ts";
import { assertError, del, mint } from "./_api_keys.ts";

Deno.test("a tenant's keys:admin key mints and revokes keys of its own tenant, any scope", async () => {
  const app = await testApp();
  try {
    const admin = await mint(app, {
      tenant_id: "acme",
      scopes: ["keys:admin"],
    });
    const child = await mint(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write", "keys:admin"],
    }, admin.api_key);
    const res = await del(app, child.key_id, admin.api_key);
    assert.equal(res.status, 204);
  } finally {
    await app.close();
  }
});

Deno.test("a tenant administrator cannot reach another tenant's keys: 403 to mint, 404 to revoke", async (t) => {
  const app = await testApp();
  try {
    const acmeAdmin = await mint(app, {
      tenant_id: "acme",
      scopes: ["keys:admin"],
    });
    const other = await mint(app, {
      tenant_id: "globex",
      scopes: ["sessions:read"],
    });
    await t.step(
      "minting for another tenant → 403 AVTR_AUTH_FORBIDDEN",
      async () => {
        for (const tenant_id of ["globex", "admin"]) {
          const res = await app.request("/v1/api-keys", {
            method: "POST",
            headers: authJson(acmeAdmin.api_key),
            body: JSON.stringify({
              tenant_id,
              scopes: ["sessions:read", "sessions:write", "keys:admin"],
            }),
          });
          await assertError(res, 403, "AVTR_AUTH_FORBIDDEN");
        }
        const list = await app.app.deps.kv.list({
          prefix: ["api_keys_by_tenant", "globex"],
        });
        let n = 0;
        for await (const _ of list) n++;
        assert.equal(n, 1, "no key was minted for globex");
      },
    );
    await t.step(
      "revoking another tenant's key → 404 AVTR_API_KEY_NOT_FOUND, as for an unknown key",
      async () => {
        const foreign = await del(app, other.key_id, acmeAdmin.api_key);
        const unknown = await del(
          app,
          "01ARZ3NDEKTSV4RRFFQ69G5FAV",
          acmeAdmin.api_key,
        );
        assert.equal(foreign.status, 404);
        assert.equal(unknown.status, 404);
        const [a, b] = [await foreign.json(), await unknown.json()];
        assert.equal(a.code, "AVTR_API_KEY_NOT_FOUND");
        assert.deepEqual(
          { code: a.code, message: a.message },
          { code: b.code, message: b.message },
        );
        // The key still works.
        const res = await app.request("/v1/sessions/session:none", {
          headers: { authorization: `Bearer ${other.api_key}` },
        });
        await res.body?.cancel();
        assert.equal(res.status, 404);
      },
    );
    await t.step(
      "the operator (ADMIN_API_KEY, or a key of tenant admin) mints and revokes for any tenant",
      async () => {
        const opKey = await mint(app, {
          tenant_id: "admin",
          scopes: ["keys:admin"],
        });
        const minted = await mint(app, {
          tenant_id: "globex",
          scopes: ["keys:admin"],
        }, opKey.api_key);
        assert.equal(
          (await del(app, minted.key_id, opKey.api_key)).status,
          204,
        );
        assert.equal((await del(app, other.key_id)).status, 204);
      },
    );
  } finally {
    await app.close();
  }
});

Deno.test("/v1/api-keys refuses missing, invalid, revoked and expired credentials and keys without keys:admin", async (t) => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  try {
    const reader = await mint(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write"],
    });
    const victim = await mint(app, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    const post = (headers: Record<string, string>) =>
      app.request("/v1/api-keys", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ tenant_id: "acme", scopes: ["sessions:read"] }),
      });
    await t.step(
      "no credential → 401 AVTR_AUTH_MISSING_CREDENTIALS",
      async () => {
        await assertError(await post({}), 401, "AVTR_AUTH_MISSING_CREDENTIALS");
        const res = await app.request(`/v1/api-keys/${victim.key_id}`, {
          method: "DELETE",
        });
        await assertError(res, 401, "AVTR_AUTH_MISSING_CREDENTIALS");
      },
    );
    await t.step("unrecognized → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await assertError(
        await post({ authorization: "Bearer avk_nope" }),
        401,
        "AVTR_AUTH_INVALID_KEY",
      );
      await assertError(
        await post({ "x-api-key": "wrong" }),
        401,
        "AVTR_AUTH_INVALID_KEY",
      );
      await assertError(
        await del(app, victim.key_id, "wrong"),
        401,
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step(
      "no keys:admin → 403 AVTR_AUTH_MISSING_SCOPE on POST and DELETE",
      async () => {
        await assertError(
          await post({ "x-api-key": reader.api_key }),
          403,
          "AVTR_AUTH_MISSING_SCOPE",
        );
        await assertError(
          await del(app, victim.key_id, reader.api_key),
          403,
          "AVTR_AUTH_MISSING_SCOPE",
        );
        // The refused DELETE changed nothing.
        await assertError(
          await post({ "x-api-key": victim.api_key }),
          403,
          "AVTR_AUTH_MISSING_SCOPE",
        );
      },
    );
    await t.step(
      "revoked → 401 AVTR_AUTH_INVALID_KEY on the very next request",
      async () => {
        const admin = await mint(app, {
          tenant_id: "acme",
          scopes: ["keys:admin"],
        });
        assert.equal(
          (await post({ authorization: `Bearer ${admin.api_key}` })).status,
          201,
        );
        assert.equal((await del(app, admin.key_id)).status, 204);
        await assertError(
          await post({ authorization: `Bearer ${admin.api_key}` }),
          401,
          "AVTR_AUTH_INVALID_KEY",
        );
      },
    );
    await t.step("expired → 401 AVTR_AUTH_EXPIRED_TOKEN", async () => {
      const admin = await mint(app, {
        tenant_id: "acme",
        scopes: ["keys:admin"],
        expires_at: clock.t + 1000,
      });
      assert.equal((await post({ "x-api-key": admin.api_key })).status, 201);
      clock.advance(1000);
      await assertError(
        await post({ "x-api-key": admin.api_key }),
        401,
        "AVTR_AUTH_EXPIRED_TOKEN",
      );
    });
  } finally {
    await app.close();
  }
});
