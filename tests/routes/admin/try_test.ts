import assert from "node:assert/strict";
import { moveSession, readSession } from "../../../lib/sessions.ts";
import { verifyToken } from "../../../lib/auth/tokens.ts";
import { testApp } from "../../_helpers.ts";
import {
  createSessionViaApi,
  get,
  mintViaApi,
  post,
  signIn,
} from "./_console.ts";

type App = Awaited<ReturnType<typeof testApp>>;

const ENGINE = "wss://engine.example/ecep";
/** Anything shaped like a media token (`mt1.<payload>.<mac>`). */
const TOKEN_SHAPE = /mt1\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/;

function startFields(
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    action: "start",
    tenant: "acme",
    engine_url: ENGINE,
    header_name: "",
    header_value: "",
    avatar_id: "leo",
    bg_id: "sunset",
    ...extra,
  };
}

/** Starts a session from the Try it form; returns its id from the redirect. */
async function startViaForm(
  app: App,
  c: Awaited<ReturnType<typeof signIn>>,
  extra: Record<string, string> = {},
): Promise<string> {
  const res = await post(app, c, "/admin/try", startFields(extra));
  assert.equal(res.status, 303, await res.text());
  const location = res.headers.get("location") ?? "";
  const m = location.match(/^\/admin\/try\?session=([^&]+)$/);
  assert.ok(m, location);
  return decodeURIComponent(m[1]);
}

async function activate(app: App, id: string): Promise<void> {
  const deps = app.app.deps;
  assert.ok(
    (await moveSession(deps, id, { from: ["created"], to: "activating" })).ok,
  );
  assert.ok(
    (await moveSession(deps, id, { from: ["activating"], to: "active" })).ok,
  );
}

async function sessionCount(app: App): Promise<number> {
  let n = 0;
  for await (const _ of app.app.deps.kv.list({ prefix: ["sessions"] })) n++;
  return n;
}

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

Deno.test("try it: start, talk page, token, end", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    let id = "";
    await t.step(
      "start creates the session for the chosen tenant",
      async () => {
        id = await startViaForm(app, c, {
          header_name: "authorization",
          header_value: "Bearer engine-secret-value",
        });
        const rec = await readSession(app.app.deps, id);
        assert.equal(rec?.tenant_id, "acme");
        assert.equal(rec?.provider_type, "external_engine");
        assert.equal(rec?.transport, "websocket_fmp4");
        assert.equal(rec?.avatar_id, "leo");
        assert.equal(rec?.bg_id, "sunset");
        // The engine credential went to the vault, not to KV.
        for await (const e of app.app.deps.kv.list({ prefix: [] })) {
          const text = JSON.stringify(
            e.value,
            (_, v) => typeof v === "bigint" ? String(v) : v,
          );
          assert.doesNotMatch(text, /engine-secret-value/);
        }
      },
    );
    await t.step("the talk page carries the island but no token", async () => {
      const res = await get(app, c, `/admin/try?session=${id}`);
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /data-island="TryIt"/);
      assert.match(
        html,
        /&quot;tokenUrl&quot;:&quot;\/admin\/try\/token&quot;/,
      );
      assert.match(
        html,
        /&quot;workletUrl&quot;:&quot;\/static\/build\/pcm-worklet\.js&quot;/,
      );
      assert.ok(html.includes(id));
      assert.doesNotMatch(html, TOKEN_SHAPE);
      assert.doesNotMatch(html, /client_token|session_token|token=/);
      assert.doesNotMatch(html, /engine-secret-value/);
      assert.match(html, /<video[^>]*muted/);
      assert.match(html, /Enable sound/);
      assert.match(html, />End session</);
    });
    await t.step(
      "the token endpoint answers a fresh client token",
      async () => {
        const res = await post(app, c, "/admin/try/token", { session_id: id });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("cache-control"), "no-store");
        const body = await res.json();
        assert.deepEqual(Object.keys(body).sort(), [
          "client_token",
          "expires_at",
        ]);
        const check = verifyToken(app.app.deps, body.client_token, {
          sessionId: id,
          purposes: ["client"],
        });
        assert.ok(check.ok);
        assert.equal(check.expiresAt, body.expires_at);
      },
    );
    await t.step(
      "ending a session that never connected is refused in place",
      async () => {
        const res = await post(app, c, "/admin/try", {
          action: "end",
          session_id: id,
        });
        assert.equal(res.status, 409);
        const html = await res.text();
        assert.match(html, /Session cannot be ended while it is created/);
        assert.match(html, /data-island="TryIt"/);
      },
    );
    await t.step("End ends an active session", async () => {
      await activate(app, id);
      const res = await post(app, c, "/admin/try", {
        action: "end",
        session_id: id,
      });
      assert.equal(res.status, 303);
      assert.equal(
        res.headers.get("location"),
        `/admin/try?session=${encodeURIComponent(id)}`,
      );
      assert.equal((await readSession(app.app.deps, id))?.status, "ended");
      const html = await (await get(app, c, `/admin/try?session=${id}`))
        .text();
      assert.match(html, /Session ended\./);
      assert.doesNotMatch(html, /data-island="TryIt"/);
      assert.match(html, /Start session/);
    });
    await t.step("no token for a session that is over", async () => {
      const res = await post(app, c, "/admin/try/token", { session_id: id });
      assert.equal(res.status, 409);
      assert.equal((await res.json()).code, "AVTR_SESSION_ENDED");
    });
  } finally {
    await app.close();
  }
});

Deno.test("try it: only sessions this console session started here", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const other = await signIn(app);
    const mine = await startViaForm(app, c);
    const acme = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write"],
    });
    // Same tenant as `mine`, created through /v1, not on this page.
    const viaApi = await createSessionViaApi(app, acme.api_key);
    const theirs = await startViaForm(app, other, { tenant: "globex" });

    for (
      const [label, id] of [
        ["another tenant's session, started by another operator", theirs],
        ["a session of the same tenant created through the API", viaApi],
        ["an unknown session", "session:01ZZZZZZZZZZZZZZZZZZZZZZZZ"],
        ["not a session id", "../../v1"],
      ]
    ) {
      await t.step(`token: ${label}`, async () => {
        const res = await post(app, c, "/admin/try/token", { session_id: id });
        assert.equal(res.status, 404);
        const body = await res.json();
        assert.equal(body.code, "AVTR_SESSION_NOT_FOUND");
        assert.equal(body.client_token, undefined);
      });
      await t.step(`talk page: ${label}`, async () => {
        const res = await get(
          app,
          c,
          `/admin/try?session=${encodeURIComponent(id)}`,
        );
        assert.equal(res.status, 404);
        const html = await res.text();
        assert.match(html, /not started from this console session/);
        assert.doesNotMatch(html, /data-island="TryIt"/);
      });
      await t.step(`end: ${label}`, async () => {
        const res = await post(app, c, "/admin/try", {
          action: "end",
          session_id: id,
        });
        assert.equal(res.status, 404);
        await res.body?.cancel();
      });
    }
    await t.step(
      "each operator gets tokens for their own sessions",
      async () => {
        const res = await post(app, other, "/admin/try/token", {
          session_id: theirs,
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
        const mineRes = await post(app, c, "/admin/try/token", {
          session_id: mine,
        });
        assert.equal(mineRes.status, 200);
        await mineRes.body?.cancel();
      },
    );
    await t.step(
      "a new console session cannot use the old one's sessions",
      async () => {
        const out = await post(app, c, "/admin/logout", {});
        await out.body?.cancel();
        const again = await signIn(app);
        const res = await post(app, again, "/admin/try/token", {
          session_id: mine,
        });
        assert.equal(res.status, 404);
        await res.body?.cancel();
      },
    );
  } finally {
    await app.close();
  }
});
