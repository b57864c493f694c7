/**
 * Console sign-in and sessions through the real app: security headers, redirects to
 * sign-in, the cookie, refused keys and forms, expiry, revocation, sign-out. The sign-in
 * limit per address: auth_limit_test.ts.
 */
import assert from "node:assert/strict";
import { safeNext } from "../../../lib/console/http.ts";
import { TEST_ADMIN_KEY, testApp, TestClock } from "../../_helpers.ts";
import {
  cookieFrom,
  get,
  hiddenField,
  mintViaApi,
  ORIGIN,
  post,
  postLogin,
  signIn,
} from "./_console.ts";

async function kvDump(kv: Deno.Kv): Promise<string> {
  const out: string[] = [];
  for await (const e of kv.list({ prefix: [] })) {
    out.push(
      JSON.stringify(e.key),
      JSON.stringify(e.value, (_, v) => typeof v === "bigint" ? String(v) : v),
    );
  }
  return out.join("\n");
}

Deno.test("console pages carry strict security headers", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    for (const path of ["/admin/login", "/admin/sessions", "/admin/nope"]) {
      await t.step(path, async () => {
        const res = await get(app, c, path);
        await res.body?.cancel();
        const csp = res.headers.get("content-security-policy") ?? "";
        assert.match(csp, /script-src 'self'(;|$)/);
        assert.match(csp, /frame-ancestors 'none'/);
        assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
        assert.equal(res.headers.get("x-content-type-options"), "nosniff");
        assert.equal(res.headers.get("referrer-policy"), "same-origin");
        assert.equal(res.headers.get("x-frame-options"), "DENY");
        assert.equal(res.headers.get("cache-control"), "no-store");
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("console pages and actions redirect to sign-in without a session", async (t) => {
  const app = await testApp();
  try {
    const pages = [
      "/admin",
      "/admin/keys",
      "/admin/sessions",
      "/admin/sessions/session:abc",
      "/admin/tenants",
      "/admin/tenants/acme",
    ];
    for (const path of pages) {
      await t.step(`GET ${path}`, async () => {
        const res = await app.request(path, { redirect: "manual" });
        assert.equal(res.status, 303);
        const loc = res.headers.get("location")!;
        assert.match(loc, /^\/admin\/login/);
        if (path !== "/admin") {
          assert.equal(
            new URL(loc, ORIGIN).searchParams.get("next"),
            path,
          );
        }
      });
    }
    const actions = [
      "/admin/keys",
      "/admin/keys/01M80F06X4WDZM7YHCAYN2Y65B/revoke",
      "/admin/sessions/session:abc",
      "/admin/tenants",
      "/admin/tenants/acme",
      "/admin/logout",
    ];
    for (const path of actions) {
      await t.step(`POST ${path}`, async () => {
        const res = await post(app, null, path, { _csrf: "x" });
        assert.equal(res.status, 303);
        assert.equal(res.headers.get("location"), "/admin/login");
      });
    }
    await t.step("the live stream answers 401", async () => {
      const res = await app.request("/admin/sessions/events");
      assert.equal(res.status, 401);
      await res.body?.cancel();
    });
  } finally {
    await app.close();
  }
});

Deno.test("sign-in with ADMIN_API_KEY sets a strict cookie and stores no key", async () => {
  const app = await testApp();
  try {
    const res = await postLogin(app, TEST_ADMIN_KEY);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/sessions");
    const set = res.headers.getSetCookie().find((c) =>
      c.startsWith("avtr_console=")
    )!;
    assert.match(set, /; HttpOnly/);
    assert.match(set, /; SameSite=Strict/);
    assert.match(set, /; Path=\/admin/);
    assert.doesNotMatch(set, /Secure/);
    const dump = await kvDump(app.app.deps.kv);
    assert.ok(dump.includes("console_sessions"));
    assert.equal(dump.includes(TEST_ADMIN_KEY), false);
    const id = set.split(";")[0].split("=")[1];
    assert.equal(dump.includes(id), false, "KV keys sessions by hash");
  } finally {
    await app.close();
  }
});

Deno.test("sign-in cookie is Secure when the console is served over https", async () => {
  const app = await testApp({ PUBLIC_URL: "https://console.example.com" });
  try {
    const res = await postLogin(app, TEST_ADMIN_KEY);
    assert.equal(res.status, 303);
    assert.match(cookieFrom(res, "avtr_console")!, /^avtr_console=/);
    const set = res.headers.getSetCookie().find((c) =>
      c.startsWith("avtr_console=")
    )!;
    assert.match(set, /; Secure/);
  } finally {
    await app.close();
  }
});

Deno.test("sign-in refuses wrong, scope-less and expired keys with a clear message", async (t) => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  try {
    const reader = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    const expiring = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["keys:admin"],
      expires_at: clock.now() + 60_000,
    });
    clock.advance(120_000);
    const cases: [string, string, RegExp][] = [
      ["unknown key", "avk_nope", /not valid, or it has been revoked/],
      ["no keys:admin", reader.api_key, /lacks the keys:admin scope/],
      ["expired key", expiring.api_key, /has expired/],
    ];
    for (const [name, key, message] of cases) {
      await t.step(name, async () => {
        const res = await postLogin(app, key);
        assert.equal(res.status, 401);
        assert.equal(cookieFrom(res, "avtr_console"), null);
        const html = await res.text();
        assert.match(html, message);
        assert.equal(html.includes(key), false, "the key is not echoed");
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("sign-in refuses a bad Origin, a missing Origin and a missing form token", async (t) => {
  const app = await testApp();
  try {
    await t.step("other origin", async () => {
      const res = await postLogin(app, TEST_ADMIN_KEY, {
        origin: "https://evil.example",
      });
      assert.equal(res.status, 403);
      assert.equal(cookieFrom(res, "avtr_console"), null);
      await res.body?.cancel();
    });
    await t.step("no Origin header", async () => {
      const res = await postLogin(app, TEST_ADMIN_KEY, { origin: null });
      assert.equal(res.status, 403);
      await res.body?.cancel();
    });
    await t.step("no double-submit cookie", async () => {
      const page = await (await app.request("/admin/login")).text();
      const res = await app.request("/admin/login", {
        method: "POST",
        headers: {
          origin: ORIGIN,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({
          _csrf: hiddenField(page, "_csrf"),
          api_key: TEST_ADMIN_KEY,
        }),
        redirect: "manual",
      });
      assert.equal(res.status, 403);
      assert.equal(cookieFrom(res, "avtr_console"), null);
      assert.match(await res.text(), /sign-in form expired/);
    });
  } finally {
    await app.close();
  }
});

Deno.test("a keys:admin API key signs in; revoking it ends the console session at once", async () => {
  const app = await testApp();
  try {
    const admin = await mintViaApi(app, {
      tenant_id: "ops",
      scopes: ["keys:admin"],
    });
    const c = await signIn(app, admin.api_key);
    const ok = await get(app, c, "/admin/keys");
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), new RegExp(`key ${admin.key_id}`));
    const dump = await kvDump(app.app.deps.kv);
    assert.equal(dump.includes(admin.api_key), false);

    const del = await app.request(`/v1/api-keys/${admin.key_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    });
    assert.equal(del.status, 204);
    const after = await get(app, c, "/admin/keys");
    assert.equal(after.status, 303);
    assert.match(after.headers.get("location")!, /^\/admin\/login/);
    assert.match(after.headers.getSetCookie().join(), /avtr_console=;/);
  } finally {
    await app.close();
  }
});

Deno.test("console sessions expire after their lifetime (stored expiry checked)", async () => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  try {
    const c = await signIn(app);
    clock.advance(8 * 60 * 60 * 1000);
    const res = await get(app, c, "/admin/sessions");
    assert.equal(res.status, 303);
  } finally {
    await app.close();
  }
});

Deno.test("a changed ADMIN_API_KEY ends console sessions started with the old one", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    app.app.deps.config.adminApiKey = "another-admin-key-0123456789abcdefghij";
    const res = await get(app, c, "/admin/sessions");
    assert.equal(res.status, 303);
  } finally {
    await app.close();
  }
});

Deno.test("sign-out deletes the console session and clears the cookie", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const bad = await post(app, c, "/admin/logout", { _csrf: "wrong" });
    assert.equal(bad.status, 403);
    await bad.body?.cancel();
    const res = await post(app, c, "/admin/logout", {});
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login?signed_out=1");
    assert.match(
      res.headers.getSetCookie().join(),
      /avtr_console=; .*Max-Age=0/,
    );
    const dump = await kvDump(app.app.deps.kv);
    assert.equal(dump.includes("console_sessions"), false);
    const after = await get(app, c, "/admin/keys");
    assert.equal(after.status, 303);
  } finally {
    await app.close();
  }
});

Deno.test("an unknown console path answers an HTML 404 page", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const res = await get(app, c, "/admin/nope");
    assert.equal(res.status, 404);
    assert.match(res.headers.get("content-type")!, /text\/html/);
    assert.match(await res.text(), /Page not found/);
  } finally {
    await app.close();
  }
});

Deno.test("safeNext() only lets sign-in return to console paths", async (t) => {
  const cases: [string | null, string][] = [
    ["/admin/keys?tenant=acme", "/admin/keys?tenant=acme"],
    ["/admin", "/admin"],
    [null, "/admin/sessions"],
    ["//evil.example/admin", "/admin/sessions"],
    ["https://evil.example/admin", "/admin/sessions"],
    ["/admin//evil.example", "/admin/sessions"],
    ["/admin\\@evil.example", "/admin/sessions"],
    ["/adminx", "/admin/sessions"],
    ["/v1/sessions", "/admin/sessions"],
  ];
  for (const [next, want] of cases) {
    await t.step(String(next), () => assert.equal(safeNext(next), want));
  }
});
