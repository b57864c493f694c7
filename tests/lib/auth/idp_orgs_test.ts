/** Identity-provider organizations mapped to tenants (lib/auth/idp_orgs.ts). */
import assert from "node:assert/strict";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { ApiError } from "../../../lib/errors.ts";
import {
  deleteOrgMapping,
  getOrgTenant,
  listOrgMappings,
  setOrgMapping,
} from "../../../lib/auth/idp_orgs.ts";
import { memoryLogger } from "../../../lib/log.ts";

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

Deno.test("idp_orgs maps, lists, reads and deletes org → tenant mappings", async () => {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:" },
    kv: await Deno.openKv(":memory:"),
    now: () => NOW,
    log: memoryLogger(),
  });
  try {
    await setOrgMapping(deps, "org_b", "tenant-b");
    await setOrgMapping(deps, "org_a", "tenant-a");
    await setOrgMapping(deps, "org_a", "tenant-a2");
    assert.equal(await getOrgTenant(deps, "org_a"), "tenant-a2");
    assert.equal(await getOrgTenant(deps, "org_zz"), null);
    assert.deepEqual(
      (await listOrgMappings(deps)).map((
        m,
      ) => [m.org_id, m.tenant_id, m.created_at]),
      [["org_a", "tenant-a2", NOW], ["org_b", "tenant-b", NOW]],
    );
    assert.equal(await deleteOrgMapping(deps, "org_a"), true);
    assert.equal(await deleteOrgMapping(deps, "org_a"), false);
    assert.equal(await getOrgTenant(deps, "org_a"), null);
    for (
      const [org, tenant, param] of [
        ["", "t", "org_id"],
        ["has space", "t", "org_id"],
        ["o".repeat(201), "t", "org_id"],
        ["org", "bad tenant", "tenant_id"],
        ["org", "", "tenant_id"],
      ]
    ) {
      await assert.rejects(setOrgMapping(deps, org, tenant), (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.code, "AVTR_REQUEST_INVALID");
        assert.equal(err.param, param);
        return true;
      });
    }
  } finally {
    await closeDeps(deps);
  }
});
