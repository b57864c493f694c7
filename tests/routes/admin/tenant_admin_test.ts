/**
 * The console as a tenant administrator (DECISIONS 2): a `keys:admin` key of tenant
 * `acme` signs in and sees and changes tenant `acme` only — keys, sessions and their live
 * feed, the tenant page with its webhook secret and deliveries, Try it — while tenant
 * `globex` stays out of reach and the operator still sees every tenant.
 */
import assert from "node:assert/strict";
import type { SessionsSnapshot } from "../../../lib/console/live.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { getOrgTenant } from "../../../lib/auth/idp_orgs.ts";
import { moveSession, readSession } from "../../../lib/sessions.ts";
import { getTenantSettings } from "../../../lib/tenants.ts";
import {
  derivedSecret,
  generateSecret,
  getDelivery,
  getWebhookSecret,
} from "../../../lib/webhooks/index.ts";
import { authJson, testApp } from "../../_helpers.ts";
import {
  type Console,
  createSessionViaApi,
  get,
  mintViaApi,
  post,
  signIn,
  storeDeadEvent,
} from "./_console.ts";
import { SseReader } from "./_sse.ts";

type App = Awaited<ReturnType<typeof testApp>>;

const SECRETS = /whsec_[A-Za-z0-9+/=]+/g;

async function keysOf(app: App, tenant: string): Promise<number> {
  let n = 0;
  const iter = app.app.deps.kv.list({ prefix: ["api_keys_by_tenant", tenant] });
  for await (const _ of iter) n++;
  return n;
}

const keyRows = (html: string) =>
  [...html.matchAll(/data-key-id="([^"]+)"/g)].map((m) => m[1]);
const sessionRows = (html: string) =>
  [...html.matchAll(/<tr data-session-id="([^"]+)"/g)].map((m) => m[1]);

Deno.test("the console shows and changes a tenant administrator's own tenant only", async (t) => {
  const envSecret = generateSecret();
  const app = await testApp({ WEBHOOK_SECRET: envSecret });
  try {
    const deps = app.app.deps;
    const acmeAdmin = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["keys:admin"],
    });
    const acmeKey = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write"],
    });
    const globexKey = await mintViaApi(app, {
      tenant_id: "globex",
      scopes: ["sessions:read", "sessions:write", "keys:admin"],
    });
    const sa = await createSessionViaApi(app, acmeKey.api_key);
    const sg = await createSessionViaApi(app, globexKey.api_key);
    assert.ok(
      (await moveSession(deps, sg, { from: ["created"], to: "activating" }))
        .ok,
    );
    assert.ok(
      (await moveSession(deps, sg, { from: ["activating"], to: "active" })).ok,
    );
    const acmeEvent = await storeDeadEvent(
      app,
      "acme",
      "msg_01M80F06X4WDZM7YHCAYN2Y61B",
    );
    const globexEvent = await storeDeadEvent(
      app,
      "globex",
      "msg_01M80F06X4WDZM7YHCAYN2Y62B",
    );
    const c: Console = await signIn(app, acmeAdmin.api_key);

    await t.step(
      "keys page: own tenant's keys only, whatever the filter",
      async () => {
        for (const path of ["/admin/keys", "/admin/keys?tenant=globex"]) {
          const html = await (await get(app, c, path)).text();
          assert.deepEqual(
            keyRows(html).sort(),
            [acmeAdmin.key_id, acmeKey.key_id].sort(),
            path,
          );
          assert.equal(html.includes("globex"), false, path);
        }
      },
    );

    await t.step(
      "minting for another tenant is refused (403), for its own works",
      async () => {
        const res = await post(app, c, "/admin/keys", {
          tenant_id: "globex",
          scopes: ["keys:admin", "sessions:read"],
          expires_in_days: "0",
        });
        assert.equal(res.status, 403);
        assert.match(await res.text(), /administer your own tenant only/);
        assert.equal(await keysOf(app, "globex"), 1);
        const own = await post(app, c, "/admin/keys", {
          tenant_id: "acme",
          scopes: ["sessions:read"],
          expires_in_days: "0",
        });
        assert.equal(own.status, 201);
        await own.body?.cancel();
        assert.equal(await keysOf(app, "acme"), 3);
      },
    );

    await t.step(
      "revoking another tenant's key answers 404 and changes nothing",
      async () => {
        for (const confirm of ["", "yes"]) {
          const res = await post(
            app,
            c,
            `/admin/keys/${globexKey.key_id}/revoke`,
            confirm ? { confirm } : {},
          );
          assert.equal(res.status, 404);
          assert.equal((await res.text()).includes("globex"), false);
        }
        const still = await app.request(`/v1/sessions/${sg}`, {
          headers: authJson(globexKey.api_key),
        });
        await still.body?.cancel();
        assert.equal(still.status, 200, "the globex key still works");
      },
    );

    await t.step(
      "sessions page: own sessions and live count only",
      async () => {
        for (
          const path of ["/admin/sessions", "/admin/sessions?tenant=globex"]
        ) {
          const html = await (await get(app, c, path)).text();
          assert.deepEqual(sessionRows(html), [sa], path);
          assert.match(html, /data-testid="live-count">1</, path);
          assert.equal(html.includes(sg), false, path);
        }
      },
    );

    await t.step(
      "another tenant's session detail and end answer 404",
      async () => {
        const page = await get(app, c, `/admin/sessions/${sg}`);
        assert.equal(page.status, 404);
        assert.equal((await page.text()).includes("globex"), false);
        const end = await post(app, c, `/admin/sessions/${sg}`, {
          action: "force_end",
          confirm: "yes",
        });
        assert.equal(end.status, 404);
        await end.body?.cancel();
        assert.equal((await readSession(deps, sg))?.status, "active");
        const own = await get(app, c, `/admin/sessions/${sa}`);
        assert.equal(own.status, 200);
        await own.body?.cancel();
      },
    );

    await t.step(
      "the live feed carries own sessions only, whatever the filter",
      async () => {
        for (const q of ["", "?tenant=globex"]) {
          const sse = new SseReader(
            await get(app, c, `/admin/sessions/events${q}`),
          );
          const snap = JSON.parse((await sse.next())!.data) as SessionsSnapshot;
          await sse.close();
          assert.deepEqual(snap.rows.map((r) => r.session_id), [sa], q);
          assert.equal(snap.live_count, 1, q);
        }
      },
    );

    await t.step(
      "tenants: the list is the own tenant's page; others are not found",
      async () => {
        const list = await get(app, c, "/admin/tenants");
        assert.equal(list.status, 303);
        assert.equal(list.headers.get("location"), "/admin/tenants/acme");
        const other = await get(app, c, "/admin/tenants/globex");
        assert.equal(other.status, 404);
        await other.body?.cancel();
        const own = await (await get(app, c, "/admin/tenants/acme")).text();
        assert.match(own, new RegExp(`data-event-id="${acmeEvent.event_id}"`));
        assert.equal(own.includes(globexEvent.event_id), false);
        assert.match(own, /href="\/admin\/tenants\/acme"[^>]*>Tenant</);
      },
    );

    await t.step(
      "webhook secret: another tenant's reveal and rotate answer 404",
      async () => {
        const before = await getWebhookSecret(deps, OPERATOR, "globex");
        const attempts: Record<string, string>[] = [
          { action: "reveal_secret" },
          { action: "rotate_secret", confirm: "yes" },
        ];
        for (const fields of attempts) {
          const res = await post(app, c, "/admin/tenants/globex", fields);
          assert.equal(res.status, 404);
          assert.equal(/whsec_/.test(await res.text()), false);
        }
        assert.deepEqual(
          await getWebhookSecret(deps, OPERATOR, "globex"),
          before,
        );
      },
    );

    await t.step(
      "webhook secret: its own is derived for it, never WEBHOOK_SECRET",
      async () => {
        const res = await post(app, c, "/admin/tenants/acme", {
          action: "reveal_secret",
        });
        assert.equal(res.status, 200);
        const html = await res.text();
        assert.deepEqual(html.match(SECRETS), [
          derivedSecret(envSecret, "acme"),
        ]);
        assert.equal(html.includes(envSecret), false);
        assert.equal(html.includes(derivedSecret(envSecret, "globex")), false);
      },
    );

    await t.step(
      "deliveries: another tenant's dead letter cannot be retried",
      async () => {
        const res = await post(app, c, "/admin/tenants/acme", {
          action: "retry_delivery",
          event_id: globexEvent.event_id,
        });
        assert.equal(res.status, 409);
        assert.match(await res.text(), /no longer exists/);
        assert.equal(
          (await getDelivery(deps, OPERATOR, globexEvent.event_id))?.state,
          "dead",
        );
        const own = await post(app, c, "/admin/tenants/acme", {
          action: "retry_delivery",
          event_id: acmeEvent.event_id,
        });
        assert.equal(own.status, 303);
      },
    );

    await t.step(
      "limit and organization mappings are the operator's (403)",
      async () => {
        const limit = await post(app, c, "/admin/tenants/acme", {
          action: "set_limit",
          max_concurrent_sessions: "5000",
        });
        assert.equal(limit.status, 403);
        await limit.body?.cancel();
        assert.deepEqual(await getTenantSettings(deps, "acme"), {});
        const mapOwn = await post(app, c, "/admin/tenants/acme", {
          action: "map_org",
          org_id: "org_globex",
        });
        assert.equal(mapOwn.status, 403);
        await mapOwn.body?.cancel();
        const map = await post(app, c, "/admin/tenants", {
          action: "map",
          org_id: "org_globex",
          tenant_id: "acme",
        });
        assert.equal(map.status, 403);
        await map.body?.cancel();
        assert.equal(await getOrgTenant(deps, "org_globex"), null);
      },
    );

    await t.step("Try it starts sessions for its own tenant only", async () => {
      const form = await (await get(app, c, "/admin/try")).text();
      assert.match(form, /name="tenant"[^>]*value="acme"/);
      const res = await post(app, c, "/admin/try", {
        action: "start",
        tenant: "globex",
        engine_url: "wss://engine.example/ws",
      });
      assert.equal(res.status, 403);
      assert.match(await res.text(), /administer your own tenant only/);
      const page = await (await get(app, c, "/admin/sessions")).text();
      assert.deepEqual(sessionRows(page), [sa]);
    });

    await t.step("the operator still sees every tenant", async () => {
      const op = await signIn(app);
      const keys = await (await get(app, op, "/admin/keys")).text();
      assert.ok(keyRows(keys).includes(globexKey.key_id));
      const sessions = await (await get(app, op, "/admin/sessions")).text();
      assert.deepEqual(sessionRows(sessions).sort(), [sa, sg].sort());
      const globex = await get(app, op, "/admin/tenants/globex");
      assert.equal(globex.status, 200);
      await globex.body?.cancel();
    });
  } finally {
    await app.close();
  }
});
