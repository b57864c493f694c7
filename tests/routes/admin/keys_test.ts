import assert from "node:assert/strict";
import { authJson, testApp } from "../../_helpers.ts";
import { get, mintViaApi, post, signIn } from "./_console.ts";

const PLAINTEXT = /avk_[0-9A-Z]{26}_[A-Za-z0-9_-]{43}/;
const PLAINTEXTS = /avk_[0-9A-Z]{26}_[A-Za-z0-9_-]{43}/g;

Deno.test("keys page mints a key and shows its plaintext once, never again", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const res = await post(app, c, "/admin/keys", {
      tenant_id: "acme",
      scopes: ["sessions:read", "keys:admin"],
      name: "ci deploy",
      expires_in_days: "30",
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const html = await res.text();
    const shown = html.match(PLAINTEXTS) ?? [];
    assert.equal(shown.length, 1, "the plaintext appears exactly once");
    const plaintext = shown[0];
    assert.match(html, /It will not be shown again/);
    assert.match(html, /data-island="CopyButton"/);

    // It works against /v1 (keys:admin: it may mint keys itself).
    const use = await app.request("/v1/api-keys", {
      method: "POST",
      headers: authJson(plaintext),
      body: JSON.stringify({ tenant_id: "acme", scopes: ["sessions:read"] }),
    });
    assert.equal(use.status, 201);
    await use.body?.cancel();

    // Not on the list page, not in a redirect, not in KV.
    const list = await (await get(app, c, "/admin/keys")).text();
    assert.equal(list.includes(plaintext), false);
    assert.match(list, /ci deploy/);
    for await (const e of app.app.deps.kv.list({ prefix: [] })) {
      assert.equal(JSON.stringify(e.value).includes(plaintext), false);
    }
    assert.equal(
      app.log.lines.some((l) => l.includes(plaintext)),
      false,
      "never logged",
    );
  } finally {
    await app.close();
  }
});

Deno.test("keys page shows mint errors in place and keeps the entered values", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const cases: [string, Record<string, string | string[]>, RegExp][] = [
      ["bad tenant", {
        tenant_id: "no spaces",
        scopes: ["sessions:read"],
      }, /id="mint-tenant_id-error"/],
      ["no scope", { tenant_id: "acme" }, /id="mint-scopes-error"/],
      ["bad expiry", {
        tenant_id: "acme",
        scopes: ["sessions:read"],
        expires_in_days: "3",
      }, /id="mint-expires_at-error"/],
    ];
    for (const [name, fields, error] of cases) {
      await t.step(name, async () => {
        const res = await post(app, c, "/admin/keys", fields);
        assert.equal(res.status, 400);
        const html = await res.text();
        assert.match(html, error);
        assert.equal(PLAINTEXT.test(html), false);
        assert.match(html, new RegExp(`value="${fields.tenant_id}"`));
      });
    }
    const keys = await (await get(app, c, "/admin/keys")).text();
    assert.match(keys, /No API keys yet/);
  } finally {
    await app.close();
  }
});

Deno.test("keys page refuses a mint with a wrong CSRF token or another Origin", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const fields = { tenant_id: "acme", scopes: ["sessions:read"] };
    await t.step("wrong token", async () => {
      const res = await post(app, c, "/admin/keys", {
        ...fields,
        _csrf: "forged",
      });
      assert.equal(res.status, 403);
      assert.match(await res.text(), /security token/);
    });
    await t.step("no token", async () => {
      const res = await post(app, c, "/admin/keys", { ...fields, _csrf: "" });
      assert.equal(res.status, 403);
      await res.body?.cancel();
    });
    await t.step("other origin", async () => {
      const res = await post(app, c, "/admin/keys", fields, {
        origin: "https://evil.example",
      });
      assert.equal(res.status, 403);
      assert.match(await res.text(), /Origin/);
    });
    await t.step("nothing was minted", async () => {
      const html = await (await get(app, c, "/admin/keys")).text();
      assert.match(html, /No API keys yet/);
    });
  } finally {
    await app.close();
  }
});

Deno.test("keys page lists keys with tenant filter and paging", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const ids: string[] = [];
    for (let i = 0; i < 27; i++) {
      ids.push(
        (await mintViaApi(app, {
          tenant_id: i < 26 ? "big" : "small",
          scopes: ["sessions:read"],
          name: `key ${i}`,
        })).key_id,
      );
    }
    await t.step("filter by tenant", async () => {
      const html = await (await get(app, c, "/admin/keys?tenant=small")).text();
      assert.match(html, new RegExp(`data-key-id="${ids[26]}"`));
      assert.equal((html.match(/data-key-id=/g) ?? []).length, 1);
    });
    await t.step("pages of 25, newest first", async () => {
      const first = await (await get(app, c, "/admin/keys?tenant=big")).text();
      assert.equal((first.match(/data-key-id=/g) ?? []).length, 25);
      assert.match(first, new RegExp(`data-key-id="${ids[25]}"`));
      const next = first.match(
        /href="(\/admin\/keys\?tenant=big&amp;cursor=[^"]+)"/,
      );
      assert.ok(next, "a next-page link");
      const second = await (await get(app, c, next[1].replaceAll("&amp;", "&")))
        .text();
      assert.equal((second.match(/data-key-id=/g) ?? []).length, 1);
      assert.match(second, new RegExp(`data-key-id="${ids[0]}"`));
    });
    await t.step("a bad tenant filter is an error in place", async () => {
      const res = await get(app, c, "/admin/keys?tenant=a%20b");
      assert.equal(res.status, 200);
      assert.match(await res.text(), /Tenant ids are 1 to 64 characters/);
    });
  } finally {
    await app.close();
  }
});

Deno.test("revoking a key asks first, then is visible and effective against /v1 at once", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const key = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    const probe = () =>
      app.request("/v1/sessions/session:nope", {
        headers: { authorization: `Bearer ${key.api_key}` },
      });
    assert.equal((await probe()).status, 404);

    const ask = await post(app, c, `/admin/keys/${key.key_id}/revoke`, {});
    assert.equal(ask.status, 200);
    assert.match(await ask.text(), /Revoke this key\?/);
    assert.equal((await probe()).status, 404, "not revoked before confirming");

    const res = await post(app, c, `/admin/keys/${key.key_id}/revoke`, {
      confirm: "yes",
    });
    assert.equal(res.status, 303);
    assert.equal(
      res.headers.get("location"),
      `/admin/keys?revoked=${key.key_id}`,
    );
    const refused = await probe();
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).code, "AVTR_AUTH_INVALID_KEY");

    const html = await (await get(app, c, res.headers.get("location")!)).text();
    assert.match(html, /is revoked/);
    const row = html.slice(html.indexOf(`data-key-id="${key.key_id}"`));
    assert.match(row.slice(0, row.indexOf("</tr>")), />revoked</);
  } finally {
    await app.close();
  }
});

Deno.test("revoking an unknown key answers 404 and a bad token changes nothing", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const res = await post(
      app,
      c,
      "/admin/keys/01M80F06X4WDZM7YHCAYN2Y65B/revoke",
      { confirm: "yes" },
    );
    assert.equal(res.status, 404);
    await res.body?.cancel();
    const key = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    const forged = await post(app, c, `/admin/keys/${key.key_id}/revoke`, {
      confirm: "yes",
      _csrf: "forged",
    });
    assert.equal(forged.status, 403);
    await forged.body?.cancel();
    const probe = await app.request("/v1/sessions/session:nope", {
      headers: { authorization: `Bearer ${key.api_key}` },
    });
    assert.equal(probe.status, 404);
    await probe.body?.cancel();
  } finally {
    await app.close();
  }
});
