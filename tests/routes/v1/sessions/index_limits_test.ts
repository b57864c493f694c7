import assert from "node:assert/strict";
import {
  counterValue,
  sessionsOpenKey,
  tenantOpenSessionsKey,
} from "../../../../lib/sessions.ts";
import { setTenantSettings } from "../../../../lib/tenants.ts";
import {
  assertError,
  createOk,
  driveTo,
  keyRequest,
  postCreate,
  sessionApp,
  tenantKey,
  validBody,
} from "./_helpers.ts";

Deno.test("POST /v1/sessions answers 429 AVTR_RATE_LIMIT_CONCURRENT_SESSIONS past the tenant's limit", async (t) => {
  const app = await sessionApp({ MAX_CONCURRENT_SESSIONS: "2" });
  const deps = app.app.deps;
  try {
    const a = await createOk(app);
    const b = await createOk(app);
    await t.step("the third create is refused with retry_after", async () => {
      const body = await assertError(
        await postCreate(app, validBody()),
        "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
      );
      assert.ok(body.retry_after! >= 1);
      assert.equal(deps.renderSlots.inUse, 2);
      assert.equal(deps.vault.size, 2);
    });
    await t.step(
      "a session ended by the end call frees its place",
      async () => {
        await driveTo(deps, a, "active");
        const res = await keyRequest(app, `/v1/sessions/${a}/end`, {
          method: "POST",
        });
        assert.equal(res.status, 200);
        await createOk(app);
      },
    );
    await t.step("a failed session frees its place", async () => {
      await assertError(
        await postCreate(app, validBody()),
        "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
      );
      await driveTo(deps, b, "failed");
      await createOk(app);
    });
    await t.step("the counter equals the open sessions", async () => {
      const counter = await deps.kv.get(tenantOpenSessionsKey("admin"));
      const open = await Array.fromAsync(
        deps.kv.list({ prefix: ["sessions_open"] }),
      );
      assert.equal(counterValue(counter), 2);
      assert.equal(open.length, 2);
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions keeps the concurrency limit exact under concurrent creates", async () => {
  const app = await sessionApp({ MAX_CONCURRENT_SESSIONS: "5" });
  const deps = app.app.deps;
  try {
    const results = await Promise.all(
      Array.from({ length: 24 }, () => postCreate(app, validBody())),
    );
    const statuses = await Promise.all(results.map(async (r) => {
      await r.body?.cancel();
      return r.status;
    }));
    assert.equal(statuses.filter((s) => s === 200).length, 5);
    assert.equal(statuses.filter((s) => s === 429).length, 19);
    const open = await Array.fromAsync(
      deps.kv.list({ prefix: ["sessions_open"] }),
    );
    assert.equal(open.length, 5);
    assert.equal(
      counterValue(await deps.kv.get(tenantOpenSessionsKey("admin"))),
      5,
    );
    assert.equal(deps.renderSlots.inUse, 5);
    assert.equal(deps.vault.size, 5);
    for (const e of open) {
      assert.ok((await deps.kv.get(sessionsOpenKey(String(e.value)))).value);
    }
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions applies a tenant's own limit and counts tenants apart", async (t) => {
  const app = await sessionApp({ MAX_CONCURRENT_SESSIONS: "3" });
  const deps = app.app.deps;
  try {
    const acme = await tenantKey(deps, "acme");
    const beta = await tenantKey(deps, "beta");
    await setTenantSettings(deps, "acme", { max_concurrent_sessions: 1 });
    await t.step("acme stops at its override of 1", async () => {
      await createOk(app, validBody(), acme);
      await assertError(
        await postCreate(app, validBody(), { key: acme }),
        "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
      );
    });
    await t.step("beta has the deployment default of 3", async () => {
      for (let i = 0; i < 3; i++) await createOk(app, validBody(), beta);
      await assertError(
        await postCreate(app, validBody(), { key: beta }),
        "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
      );
    });
    await t.step("raising the override lets acme create again", async () => {
      await setTenantSettings(deps, "acme", { max_concurrent_sessions: 2 });
      await createOk(app, validBody(), acme);
    });
  } finally {
    await app.close();
  }
});
