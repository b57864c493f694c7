import assert from "node:assert/strict";
import {
  getApiKey,
  listApiKeys,
  revokeApiKey,
} from "../../../lib/auth/api_key_admin.ts";
import { createApiKey } from "../../../lib/auth/api_keys.ts";
import {
  administers,
  isOperator,
  OPERATOR,
  visibleTenant,
} from "../../../lib/principal.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { ApiError } from "../../../lib/errors.ts";
import { memoryLogger } from "../../../lib/log.ts";

const ACME = { tenantId: "acme" };

Deno.test("administers() and visibleTenant(): the operator every tenant, a tenant administrator its own", () => {
  assert.equal(isOperator(OPERATOR), true);
  assert.equal(isOperator({ tenantId: "admin" }), true);
  assert.equal(isOperator(ACME), false);
  assert.equal(administers(OPERATOR, "globex"), true);
  assert.equal(administers(ACME, "acme"), true);
  assert.equal(administers(ACME, "globex"), false);
  assert.equal(administers(ACME, "admin"), false);
  assert.equal(visibleTenant(OPERATOR, undefined), undefined);
  assert.equal(visibleTenant(OPERATOR, "globex"), "globex");
  assert.equal(visibleTenant(ACME, undefined), "acme");
  assert.equal(visibleTenant(ACME, "acme"), "acme");
  assert.equal(visibleTenant(ACME, "globex"), null);
});

Deno.test("api key functions filter by the administrator at the source", async (t) => {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:", TOKEN_SECRET: "x".repeat(32) },
    log: memoryLogger(),
  });
  try {
    const own = await createApiKey(deps, ACME, {
      tenant_id: "acme",
      scopes: ["keys:admin"],
    });
    const other = await createApiKey(deps, OPERATOR, {
      tenant_id: "globex",
      scopes: ["sessions:read"],
    });
    await t.step("createApiKey() for another tenant → 403", async () => {
      await assert.rejects(
        createApiKey(deps, ACME, {
          tenant_id: "globex",
          scopes: ["sessions:read"],
        }),
        (e) => e instanceof ApiError && e.code === "AVTR_AUTH_FORBIDDEN",
      );
    });
    await t.step("listApiKeys() shows its own tenant only", async () => {
      const ids = async (tenant_id?: string) =>
        (await listApiKeys(deps, ACME, { tenant_id })).keys.map((k) =>
          k.key_id
        );
      assert.deepEqual(await ids(), [own.key.key_id]);
      assert.deepEqual(await ids("acme"), [own.key.key_id]);
      assert.deepEqual(await ids("globex"), []);
      assert.equal((await listApiKeys(deps, OPERATOR)).keys.length, 2);
    });
    await t.step(
      "getApiKey() and revokeApiKey() of another tenant's key: not found",
      async () => {
        assert.equal(await getApiKey(deps, ACME, other.key.key_id), null);
        await assert.rejects(
          revokeApiKey(deps, ACME, other.key.key_id),
          (e) => e instanceof ApiError && e.code === "AVTR_API_KEY_NOT_FOUND",
        );
        const still = await getApiKey(deps, OPERATOR, other.key.key_id);
        assert.equal(still?.revoked_at, undefined);
        assert.deepEqual(
          await revokeApiKey(deps, ACME, own.key.key_id),
          { alreadyRevoked: false },
        );
      },
    );
  } finally {
    await closeDeps(deps);
  }
});
