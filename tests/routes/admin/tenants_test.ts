import assert from "node:assert/strict";
import { getOrgTenant } from "../../../lib/auth/idp_orgs.ts";
import { getTenantSettings } from "../../../lib/tenants.ts";
import { getDelivery } from "../../../lib/webhooks/index.ts";
import { testApp } from "../../_helpers.ts";
import {
  createSessionViaApi,
  get,
  post,
  signIn,
  storeDeadEvent,
} from "./_console.ts";
import { OPERATOR } from "../../../lib/principal.ts";

const SECRET = /whsec_[A-Za-z0-9+/=]+/;
const SECRETS = /whsec_[A-Za-z0-9+/=]+/g;

Deno.test("tenants page lists known tenants and maps IdP organizations", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    await createSessionViaApi(app);
    await t.step("tenants with sessions appear", async () => {
      const html = await (await get(app, c, "/admin/tenants")).text();
      assert.match(html, /href="\/admin\/tenants\/admin"/);
      assert.match(html, /No organizations mapped/);
    });
    await t.step("map an organization", async () => {
      const res = await post(app, c, "/admin/tenants", {
        action: "map",
        org_id: "org_123",
        tenant_id: "acme",
      });
      assert.equal(res.status, 303);
      assert.equal(await getOrgTenant(app.app.deps, "org_123"), "acme");
      const html = await (await get(app, c, res.headers.get("location")!))
        .text();
      assert.match(html, /Organization org_123 now maps to tenant acme/);
      assert.match(html, /href="\/admin\/tenants\/acme"/);
    });
    await t.step("a bad tenant id is an error in place", async () => {
      const res = await post(app, c, "/admin/tenants", {
        action: "map",
        org_id: "org_9",
        tenant_id: "no spaces",
      });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /id="map-tenant-error"/);
      assert.equal(await getOrgTenant(app.app.deps, "org_9"), null);
    });
    await t.step("removing asks first, then removes", async () => {
      const ask = await post(app, c, "/admin/tenants", {
        action: "unmap",
        org_id: "org_123",
      });
      assert.match(await ask.text(), /Confirm removal/);
      assert.equal(await getOrgTenant(app.app.deps, "org_123"), "acme");
      const res = await post(app, c, "/admin/tenants", {
        action: "unmap",
        org_id: "org_123",
        confirm: "yes",
      });
      assert.equal(res.status, 303);
      assert.equal(await getOrgTenant(app.app.deps, "org_123"), null);
    });
    await t.step("open a tenant by id", async () => {
      const res = await get(app, c, "/admin/tenants?open=acme");
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "/admin/tenants/acme");
      const bad = await get(app, c, "/admin/tenants?open=a%20b");
      assert.equal(bad.status, 400);
      await bad.body?.cancel();
    });
    await t.step("a forged token changes nothing", async () => {
      const res = await post(app, c, "/admin/tenants", {
        action: "map",
        org_id: "org_x",
        tenant_id: "acme",
        _csrf: "forged",
      });
      assert.equal(res.status, 403);
      await res.body?.cancel();
      assert.equal(await getOrgTenant(app.app.deps, "org_x"), null);
    });
  } finally {
    await app.close();
  }
});

Deno.test("tenant page sets and resets the concurrency limit", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const res = await post(app, c, "/admin/tenants/acme", {
      action: "set_limit",
      max_concurrent_sessions: "3",
    });
    assert.equal(res.status, 303);
    assert.equal(
      (await getTenantSettings(app.app.deps, "acme")).max_concurrent_sessions,
      3,
    );
    const html = await (await get(app, c, res.headers.get("location")!)).text();
    assert.match(html, /Limit set to 3 concurrent sessions/);

    const bad = await post(app, c, "/admin/tenants/acme", {
      action: "set_limit",
      max_concurrent_sessions: "0",
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /id="limit-error"/);

    const reset = await post(app, c, "/admin/tenants/acme", {
      action: "set_limit",
      max_concurrent_sessions: "",
    });
    assert.equal(reset.status, 303);
    assert.equal(
      (await getTenantSettings(app.app.deps, "acme")).max_concurrent_sessions,
      undefined,
    );
    const badId = await get(app, c, "/admin/tenants/a%20b");
    assert.equal(badId.status, 404);
    await badId.body?.cancel();
  } finally {
    await app.close();
  }
});

Deno.test("tenant page reveals the webhook secret only in a POST answer, rotates after confirming", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const page = await (await get(app, c, "/admin/tenants/acme")).text();
    assert.equal(SECRET.test(page), false, "GET never shows a secret");

    let first = "";
    await t.step("reveal", async () => {
      const res = await post(app, c, "/admin/tenants/acme", {
        action: "reveal_secret",
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("cache-control"), "no-store");
      const html = await res.text();
      const found = html.match(SECRETS) ?? [];
      assert.equal(found.length, 1);
      first = found[0];
      const again = await (await get(app, c, "/admin/tenants/acme")).text();
      assert.equal(again.includes(first), false);
    });
    await t.step("rotate asks first", async () => {
      const res = await post(app, c, "/admin/tenants/acme", {
        action: "rotate_secret",
      });
      const html = await res.text();
      assert.match(html, /Rotate the signing secret\?/);
      assert.equal(SECRET.test(html), false);
    });
    await t.step("rotate confirmed shows the new secret once", async () => {
      const res = await post(app, c, "/admin/tenants/acme", {
        action: "rotate_secret",
        confirm: "yes",
      });
      const html = await res.text();
      const found = html.match(SECRETS) ?? [];
      assert.equal(found.length, 1);
      assert.notEqual(found[0], first);
      assert.match(html, /New secret in force/);
      assert.match(html, /replaced secret also signs until/);
    });
    await t.step("other origin refused", async () => {
      const res = await post(
        app,
        c,
        "/admin/tenants/acme",
        { action: "reveal_secret" },
        { origin: "https://evil.example" },
      );
      assert.equal(res.status, 403);
      assert.equal(SECRET.test(await res.text()), false);
    });
  } finally {
    await app.close();
  }
});

Deno.test("tenant page lists webhook deliveries and retries a dead one", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const deps = app.app.deps;
    const record = await storeDeadEvent(
      app,
      "acme",
      "msg_01M80F06X4WDZM7YHCAYN2Y65B",
      "https://hooks.example/in?token=receiver-secret",
    );

    const html = await (await get(app, c, "/admin/tenants/acme")).text();
    assert.match(html, new RegExp(`data-event-id="${record.event_id}"`));
    assert.match(html, /badge-dead/);
    assert.match(html, /HTTP 500/);
    assert.match(html, /https:\/\/hooks\.example\/in\?…/);
    assert.equal(html.includes("receiver-secret"), false);

    const res = await post(app, c, "/admin/tenants/acme", {
      action: "retry_delivery",
      event_id: record.event_id,
    });
    assert.equal(res.status, 303);
    const after = await getDelivery(deps, OPERATOR, record.event_id);
    assert.notEqual(after?.state, "dead");

    const again = await post(app, c, "/admin/tenants/acme", {
      action: "retry_delivery",
      event_id: "msg_nope",
    });
    assert.equal(again.status, 409);
    assert.match(await again.text(), /no longer exists/);
  } finally {
    await app.close();
  }
});
