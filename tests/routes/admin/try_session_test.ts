/**
 * A session started from the console's Try it page: the talk page, its token, ending it,
 * and only the sessions this console session started there.
 */
import assert from "node:assert/strict";
import { readSession } from "../../../lib/sessions.ts";
import { verifyToken } from "../../../lib/auth/tokens.ts";
import { testApp } from "../../_helpers.ts";
import {
  createSessionViaApi,
  get,
  mintViaApi,
  post,
  signIn,
} from "./_console.ts";
import { activate, startViaForm, TOKEN_SHAPE } from "./_try.ts";

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
