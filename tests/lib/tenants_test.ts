import assert from "node:assert/strict";
import { ApiError } from "../../lib/errors.ts";
import {
  concurrencyLimit,
  getTenantSettings,
  listTenantSettings,
  setTenantSettings,
} from "../../lib/tenants.ts";
import { testApp } from "../_helpers.ts";

Deno.test("tenant settings override the concurrency default", async (t) => {
  const app = await testApp({ MAX_CONCURRENT_SESSIONS: "7" });
  const deps = app.app.deps;
  try {
    await t.step("default when unset", async () => {
      assert.deepEqual(await getTenantSettings(deps, "acme"), {});
      assert.equal(
        concurrencyLimit(deps, await getTenantSettings(deps, "acme")),
        7,
      );
    });
    await t.step("set, read, list", async () => {
      await setTenantSettings(deps, "acme", { max_concurrent_sessions: 3 });
      await setTenantSettings(deps, "beta", { max_concurrent_sessions: 9 });
      assert.equal(
        concurrencyLimit(deps, await getTenantSettings(deps, "acme")),
        3,
      );
      const list = await listTenantSettings(deps);
      assert.deepEqual(
        list.map((x) => [x.tenant_id, x.max_concurrent_sessions]),
        [["acme", 3], ["beta", 9]],
      );
    });
    await t.step("null clears the override", async () => {
      await setTenantSettings(deps, "acme", { max_concurrent_sessions: null });
      assert.equal(
        concurrencyLimit(deps, await getTenantSettings(deps, "acme")),
        7,
      );
    });
    for (const bad of [0, -1, 1.5, 100_001, Number.NaN]) {
      await t.step(`refuses ${bad}`, async () => {
        await assert.rejects(
          setTenantSettings(deps, "acme", { max_concurrent_sessions: bad }),
          (e) =>
            e instanceof ApiError && e.code === "AVTR_REQUEST_INVALID" &&
            e.param === "max_concurrent_sessions",
        );
      });
    }
    await t.step("refuses a bad tenant id", async () => {
      await assert.rejects(setTenantSettings(deps, "a b", {}), ApiError);
    });
  } finally {
    await app.close();
  }
});
