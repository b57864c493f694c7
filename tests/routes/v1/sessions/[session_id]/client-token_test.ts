import assert from "node:assert/strict";
import { clientTokenResponseSchema } from "../../../../../lib/api/schemas.ts";
import {
  verifyMediaToken,
  verifyToken,
} from "../../../../../lib/auth/tokens.ts";
import {
  TEST_ADMIN_KEY,
  type TestApp,
  TestClock,
} from "../../../../_helpers.ts";
import {
  assertError,
  createOk,
  driveTo,
  keyRequest,
  postCreate,
  sessionApp,
  tenantKey,
  validBody,
} from "../_helpers.ts";

function mint(
  app: TestApp,
  id: string,
  key = TEST_ADMIN_KEY,
  path = "client-token",
) {
  return keyRequest(app, `/v1/sessions/${id}/${path}`, {
    method: "POST",
    key,
  });
}

Deno.test("POST /v1/sessions/{id}/client-token mints a fresh media token", async (t) => {
  const clock = new TestClock();
  const app = await sessionApp({}, { clock });
  const deps = app.app.deps;
  try {
    const created = await (await postCreate(app, validBody())).json();
    const id = created.session_id;
    await t.step(
      "a new token, valid for 5 minutes; old ones keep working",
      async () => {
        clock.advance(60_000);
        const res = await mint(app, id);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("cache-control"), "no-store");
        const body = clientTokenResponseSchema.parse(await res.json());
        assert.equal(body.expires_at, clock.now() + 5 * 60_000);
        assert.equal(body.transport, "websocket_fmp4");
        assert.equal(body.stream_metadata.sfu_endpoint, null);
        assert.notEqual(body.client_token, created.client_token);
        assert.deepEqual(verifyMediaToken(deps, body.client_token, id), {
          ok: true,
        });
        assert.deepEqual(
          verifyMediaToken(deps, body.stream_metadata.session_token, id),
          { ok: true },
        );
        assert.equal(
          verifyToken(deps, body.client_token, { purposes: ["client"] }).ok,
          true,
        );
        assert.deepEqual(verifyMediaToken(deps, created.client_token, id), {
          ok: true,
        });
        clock.advance(4 * 60_000);
        assert.deepEqual(verifyMediaToken(deps, created.client_token, id), {
          ok: false,
          code: "AVTR_AUTH_EXPIRED_TOKEN",
        });
        assert.deepEqual(verifyMediaToken(deps, body.client_token, id), {
          ok: true,
        });
      },
    );
    await t.step(
      "works in every state and leaves the session unchanged",
      async () => {
        for (const status of ["active", "ended"] as const) {
          const other = await createOk(app);
          await driveTo(deps, other, status);
          const res = await mint(app, other);
          assert.equal(res.status, 200);
          await res.body?.cancel();
          const get = await keyRequest(app, `/v1/sessions/${other}`);
          assert.equal((await get.json()).status, status);
        }
      },
    );
    await t.step("another tenant's or an absent session → 404", async () => {
      const acme = await tenantKey(deps, "acme");
      await assertError(await mint(app, id, acme), "AVTR_SESSION_NOT_FOUND");
      await assertError(
        await mint(app, "session:none"),
        "AVTR_SESSION_NOT_FOUND",
      );
      await assertError(await mint(app, "bogus"), "AVTR_SESSION_NOT_FOUND");
    });
    await t.step("a read-only key → 403", async () => {
      const ro = await tenantKey(deps, "admin", ["sessions:read"]);
      await assertError(await mint(app, id, ro), "AVTR_AUTH_MISSING_SCOPE");
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions/{id}/client-token answers 503 when the token secret is unusable", async () => {
  const app = await sessionApp({ TOKEN_SECRET: "" });
  try {
    await assertError(
      await mint(app, "session:whatever"),
      "AVTR_SESSION_STATE_UNAVAILABLE",
    );
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions/{id}/ws-token is a deprecated alias of client-token", async (t) => {
  const app = await sessionApp();
  try {
    const id = await createOk(app);
    await t.step("mints a token with the alias headers", async () => {
      const res = await mint(app, id, TEST_ADMIN_KEY, "ws-token");
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("deprecation"), "true");
      assert.equal(
        res.headers.get("link"),
        `</v1/sessions/${id}/client-token>; rel="successor-version"`,
      );
      const body = clientTokenResponseSchema.parse(await res.json());
      assert.deepEqual(verifyMediaToken(app.app.deps, body.client_token, id), {
        ok: true,
      });
    });
    await t.step("errors carry the alias headers", async () => {
      const res = await mint(app, "session:none", TEST_ADMIN_KEY, "ws-token");
      assert.equal(res.headers.get("deprecation"), "true");
      await assertError(res, "AVTR_SESSION_NOT_FOUND");
    });
  } finally {
    await app.close();
  }
});
