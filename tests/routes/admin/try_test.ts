/**
 * The console's Try it page as a guarded form: sign-in, the form and its headers, Origin
 * and CSRF on every post, API validation errors shown in place. A session started there:
 * try_session_test.ts.
 */
import assert from "node:assert/strict";
import { readSession } from "../../../lib/sessions.ts";
import { testApp } from "../../_helpers.ts";
import { get, post, signIn } from "./_console.ts";
import {
  activate,
  sessionCount,
  startFields,
  startViaForm,
  TOKEN_SHAPE,
} from "./_try.ts";

Deno.test("try it: signed-out requests go to sign-in", async (t) => {
  const app = await testApp();
  try {
    await t.step("the page", async () => {
      const res = await app.request("/admin/try", { redirect: "manual" });
      await res.body?.cancel();
      assert.equal(res.status, 303);
      assert.equal(
        res.headers.get("location"),
        "/admin/login?next=%2Fadmin%2Ftry",
      );
    });
    await t.step("the start form and the token endpoint", async () => {
      for (const path of ["/admin/try", "/admin/try/token"]) {
        const res = await post(app, null, path, startFields());
        await res.body?.cancel();
        assert.equal(res.status, 303);
        assert.equal(res.headers.get("location"), "/admin/login");
      }
      assert.equal(await sessionCount(app), 0);
    });
  } finally {
    await app.close();
  }
});

Deno.test("try it: the form, its defaults and its headers", async (t) => {
  await t.step("without TRY_ENGINE_URL: empty engine and a hint", async () => {
    const app = await testApp();
    try {
      const c = await signIn(app);
      const res = await get(app, c, "/admin/try");
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /name="tenant"[^>]*value="demo"/);
      assert.match(html, /name="engine_url"[^>]* value autocomplete=/);
      assert.match(html, /deno task demo/);
      assert.match(html, /<option value="ava" selected>Ava<\/option>/);
      assert.match(html, /<option value="office">Office<\/option>/);
      assert.match(html, /href="\/admin\/try" aria-current="page"/);
      assert.equal(
        res.headers.get("permissions-policy"),
        "camera=(), microphone=(self), geolocation=()",
      );
      const csp = res.headers.get("content-security-policy") ?? "";
      assert.match(csp, /script-src 'self';/);
      assert.match(csp, /media-src blob:;/);
      assert.match(csp, /connect-src 'self';/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|script-src[^;]*blob/);
      // Every other console page keeps the microphone off.
      const other = await get(app, c, "/admin/sessions");
      await other.body?.cancel();
      assert.equal(
        other.headers.get("permissions-policy"),
        "camera=(), microphone=(), geolocation=()",
      );
    } finally {
      await app.close();
    }
  });
  await t.step("TRY_ENGINE_URL fills the engine field", async () => {
    const app = await testApp({ TRY_ENGINE_URL: "wss://localhost:8787" });
    try {
      const c = await signIn(app);
      const html = await (await get(app, c, "/admin/try")).text();
      assert.match(
        html,
        /name="engine_url"[^>]*value="wss:\/\/localhost:8787"/,
      );
      assert.match(html, /From TRY_ENGINE_URL/);
    } finally {
      await app.close();
    }
  });
});

Deno.test("try it: state-changing posts need the Origin and the CSRF token", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const id = await startViaForm(app, c);
    const before = await sessionCount(app);
    await t.step("start without CSRF token", async () => {
      const res = await post(
        app,
        c,
        "/admin/try",
        startFields({ _csrf: "" }),
      );
      assert.equal(res.status, 403);
      assert.match(await res.text(), /security token is missing/);
    });
    await t.step("start with a wrong CSRF token", async () => {
      const res = await post(
        app,
        c,
        "/admin/try",
        startFields({ _csrf: "x".repeat(43) }),
      );
      assert.equal(res.status, 403);
      await res.body?.cancel();
    });
    await t.step("start from another origin", async () => {
      const res = await post(app, c, "/admin/try", startFields(), {
        origin: "https://evil.example",
      });
      assert.equal(res.status, 403);
      await res.body?.cancel();
    });
    assert.equal(await sessionCount(app), before);
    await t.step(
      "token without CSRF token or from another origin",
      async () => {
        for (
          const [fields, origin] of [
            [{ session_id: id, _csrf: "" }, undefined],
            [{ session_id: id }, "https://evil.example"],
            [{ session_id: id }, null],
          ] as const
        ) {
          const res = await post(app, c, "/admin/try/token", { ...fields }, {
            origin,
          });
          assert.equal(res.status, 403);
          const body = await res.text();
          assert.doesNotMatch(body, TOKEN_SHAPE);
          assert.match(res.headers.get("content-type") ?? "", /text\/html/);
        }
      },
    );
    await t.step("end without CSRF token", async () => {
      await activate(app, id);
      const res = await post(app, c, "/admin/try", {
        action: "end",
        session_id: id,
        _csrf: "",
      });
      assert.equal(res.status, 403);
      await res.body?.cancel();
      assert.equal((await readSession(app.app.deps, id))?.status, "active");
    });
  } finally {
    await app.close();
  }
});

Deno.test("try it: API validation errors are shown in place", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    await t.step("an engine URL that is not wss://", async () => {
      const res = await post(
        app,
        c,
        "/admin/try",
        startFields({
          engine_url: "http://engine.example/",
          header_name: "authorization",
          header_value: "Bearer engine-secret-value",
        }),
      );
      assert.equal(res.status, 400);
      const html = await res.text();
      assert.match(
        html,
        /id="try-engine_url-error" class="field-error">provider_config\.external_engine\.url: must be a wss:\/\/ URL \(AVTR_PROVIDER_MISCONFIGURED, param provider_config\.external_engine\.url\)</,
      );
      assert.match(
        html,
        /name="engine_url"[^>]*value="http:\/\/engine\.example\/"[^>]*aria-invalid="true"/,
      );
      // What was typed is kept, except the engine credential.
      assert.match(html, /name="tenant"[^>]*value="acme"/);
      assert.match(html, /<option value="leo" selected>/);
      assert.match(html, /name="header_name"[^>]*value="authorization"/);
      assert.doesNotMatch(html, /engine-secret-value/);
    });
    await t.step("an invalid header name", async () => {
      const res = await post(
        app,
        c,
        "/admin/try",
        startFields({ header_name: "bad name", header_value: "x" }),
      );
      assert.equal(res.status, 400);
      const html = await res.text();
      assert.match(
        html,
        /id="try-header_name-error" class="field-error">provider_config\.external_engine\.auth_headers\.bad name: /,
      );
    });
    await t.step("the form's own checks", async () => {
      const res = await post(
        app,
        c,
        "/admin/try",
        startFields({ tenant: "a b", engine_url: "" }),
      );
      assert.equal(res.status, 400);
      const html = await res.text();
      assert.match(html, /id="try-tenant-error"[^>]*>Tenant ids are 1 to 64/);
      assert.match(html, /id="try-engine_url-error"[^>]*>Enter the wss:\/\//);
    });
    await t.step("a tenant over its concurrency limit", async () => {
      const limited = await testApp({ MAX_CONCURRENT_SESSIONS: "1" });
      try {
        const c2 = await signIn(limited);
        await startViaForm(limited, c2);
        const res = await post(limited, c2, "/admin/try", startFields());
        assert.equal(res.status, 429);
        const html = await res.text();
        assert.match(html, /AVTR_RATE_LIMIT_CONCURRENT_SESSIONS/);
        assert.match(html, /role="alert"/);
      } finally {
        await limited.close();
      }
    });
    assert.equal(await sessionCount(app), 0);
  } finally {
    await app.close();
  }
});
