import assert from "node:assert/strict";
import { sessionResponseSchema } from "../../../../lib/api/schemas.ts";
import { verifyToken } from "../../../../lib/auth/tokens.ts";
import { TestClock } from "../../../_helpers.ts";
import { startVendorCApi } from "../../../lib/providers/_vendor_c_api.ts";
import {
  assertError,
  driveTo,
  postCreate,
  sessionApp,
  tenantKey,
  validBody,
} from "./_helpers.ts";

async function sessionsIn(kv: Deno.Kv): Promise<number> {
  return (await Array.fromAsync(kv.list({ prefix: ["sessions"] }))).length;
}

Deno.test("POST /v1/sessions with Idempotency-Key replays the same session", async (t) => {
  const clock = new TestClock();
  const app = await sessionApp({}, { clock });
  const deps = app.app.deps;
  const headers = { "idempotency-key": "order-42" };
  try {
    const first = await postCreate(app, validBody(), { headers });
    assert.equal(first.status, 200);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    const a = sessionResponseSchema.parse(await first.json());

    await t.step(
      "same key, same body → same session, fresh token",
      async () => {
        clock.advance(1000);
        const again = await postCreate(app, validBody(), { headers });
        assert.equal(again.status, 200);
        assert.equal(again.headers.get("idempotent-replayed"), "true");
        const b = sessionResponseSchema.parse(await again.json());
        assert.equal(b.session_id, a.session_id);
        assert.notEqual(b.client_token, a.client_token);
        assert.equal(b.expires_at, a.expires_at + 1000);
        assert.equal(
          verifyToken(deps, b.client_token, {
            sessionId: a.session_id,
            purposes: ["client"],
          }).ok,
          true,
        );
        assert.equal(await sessionsIn(deps.kv), 1);
      },
    );
    await t.step(
      "key order and whitespace do not change the body",
      async () => {
        const body = validBody();
        const reordered = `{ "provider_config": ${
          JSON.stringify(body.provider_config)
        },   "provider_type": "vendor_b" }`;
        const res = await postCreate(app, reordered, { headers });
        assert.equal(res.headers.get("idempotent-replayed"), "true");
        assert.equal((await res.json()).session_id, a.session_id);
      },
    );
    await t.step(
      "the replay reports the session's current status",
      async () => {
        await driveTo(deps, a.session_id, "active");
        const res = await postCreate(app, validBody(), { headers });
        assert.equal((await res.json()).status, "active");
      },
    );
    await t.step("same key, other body → 422", async () => {
      await assertError(
        await postCreate(app, validBody("vendor_c"), { headers }),
        "AVTR_IDEMPOTENCY_MISMATCH",
      ); // no param: a 422 (DECISIONS 3)
    });
    await t.step("the key is per tenant", async () => {
      const key = await tenantKey(deps, "acme");
      const res = await postCreate(app, validBody(), { key, headers });
      assert.equal(res.headers.get("idempotent-replayed"), null);
      assert.notEqual((await res.json()).session_id, a.session_id);
    });
    await t.step("after 24 h the key is free again", async () => {
      clock.advance(24 * 60 * 60 * 1000);
      const res = await postCreate(app, validBody("vendor_c"), { headers });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("idempotent-replayed"), null);
      assert.notEqual((await res.json()).session_id, a.session_id);
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions refuses a malformed Idempotency-Key", async (t) => {
  const app = await sessionApp();
  try {
    for (
      const [name, value] of [
        ["empty", ""],
        ["256 characters", "k".repeat(256)],
        ["non-ASCII", "cl\u00e9"],
        ["control character", "a\tb"],
      ]
    ) {
      await t.step(name, async () => {
        await assertError(
          await postCreate(app, validBody(), {
            headers: { "idempotency-key": value },
          }),
          "AVTR_REQUEST_INVALID",
          "Idempotency-Key",
        );
      });
    }
    await t.step("255 printable characters are fine", async () => {
      const res = await postCreate(app, validBody(), {
        headers: { "idempotency-key": "~".repeat(255) },
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    });
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions releases the Idempotency-Key of a failed attempt", async () => {
  const app = await sessionApp({ MAX_CONCURRENT_SESSIONS: "1" });
  const deps = app.app.deps;
  const headers = { "idempotency-key": "retry-me" };
  try {
    const blocker = await postCreate(app, validBody("vendor_c"));
    const blockerId = (await blocker.json()).session_id;
    await assertError(
      await postCreate(app, validBody(), { headers }),
      "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
    );
    await driveTo(deps, blockerId, "failed");
    const res = await postCreate(app, validBody(), { headers });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("idempotent-replayed"), null);
    await res.body?.cancel();
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions makes a duplicate wait for the in-flight first attempt, then replays", async (t) => {
  const api = startVendorCApi("hold");
  const app = await sessionApp({ VENDOR_C_API_URL: api.origin });
  const body = {
    provider_type: "vendor_c",
    provider_config: { vendor_c: { agent_id: "agent_slow", api_key: "k_1" } },
  };
  const headers = { "idempotency-key": "in-flight" };
  try {
    const arrived = api.nextRequest();
    const first = postCreate(app, body, { headers });
    await arrived;

    await t.step("another body meanwhile → 422 at once", async () => {
      await assertError(
        await postCreate(app, validBody(), { headers }),
        "AVTR_IDEMPOTENCY_MISMATCH",
      ); // no param: a 422 (DECISIONS 3)
    });

    const second = postCreate(app, body, { headers });
    while (
      !app.log.lines.some((l) =>
        l.includes("idempotent request waits for its first attempt")
      )
    ) {
      await new Promise((r) => setTimeout(r, 5));
    }
    api.release();
    const [r1, r2] = await Promise.all([first, second]);
    assert.equal(r1.status, 200);
    assert.equal(r2.status, 200);
    assert.equal(r1.headers.get("idempotent-replayed"), null);
    assert.equal(r2.headers.get("idempotent-replayed"), "true");
    const [b1, b2] = [await r1.json(), await r2.json()];
    assert.equal(b2.session_id, b1.session_id);
    assert.equal(api.requests.length, 1);
    assert.equal(await sessionsIn(app.app.deps.kv), 1);
  } finally {
    await app.close();
    await api.close();
  }
});
