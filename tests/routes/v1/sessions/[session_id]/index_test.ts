import assert from "node:assert/strict";
import { sessionStatusResponseSchema } from "../../../../../lib/api/schemas.ts";
import { TEST_ADMIN_KEY, TestClock } from "../../../../_helpers.ts";
import {
  assertError,
  createOk,
  driveTo,
  keyRequest,
  sessionApp,
  tenantKey,
  validBody,
} from "../_helpers.ts";

Deno.test("GET /v1/sessions/{id} reads the session's status", async (t) => {
  const clock = new TestClock();
  const app = await sessionApp({}, { clock });
  const deps = app.app.deps;
  const get = (id: string, key = TEST_ADMIN_KEY) =>
    keyRequest(app, `/v1/sessions/${id}`, { key });
  try {
    const createdAt = clock.now();
    const id = await createOk(app, validBody("external_engine"));
    await t.step("created", async () => {
      const res = await get(id);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("deprecation"), null);
      const body = sessionStatusResponseSchema.parse(await res.json());
      assert.deepEqual(body, {
        session_id: id,
        transport: "websocket_fmp4",
        status: "created",
        provider_type: "external_engine",
        created_at: createdAt,
      });
    });
    await t.step("active has started_at", async () => {
      clock.advance(2000);
      await driveTo(deps, id, "active");
      const body = sessionStatusResponseSchema.parse(
        await (await get(id)).json(),
      );
      assert.equal(body.status, "active");
      assert.equal(body.started_at, createdAt + 2000);
      assert.equal(body.ended_at, undefined);
    });
    await t.step("ended has ended_at and never a token", async () => {
      clock.advance(3000);
      const endRes = await keyRequest(app, `/v1/sessions/${id}/end`, {
        method: "POST",
      });
      await endRes.body?.cancel();
      const text = await (await get(id)).text();
      const body = sessionStatusResponseSchema.parse(JSON.parse(text));
      assert.equal(body.status, "ended");
      assert.equal(body.ended_at, createdAt + 5000);
      assert.doesNotMatch(text, /token|mt1\./);
    });
    await t.step("terminal sessions stay readable for 7 days", async () => {
      clock.advance(7 * 24 * 60 * 60 * 1000 - 1);
      assert.equal((await get(id)).status, 200);
      clock.advance(1);
      await assertError(await get(id), "AVTR_SESSION_NOT_FOUND");
    });
    await t.step("HEAD answers without a body", async () => {
      const other = await createOk(app);
      const res = await keyRequest(app, `/v1/sessions/${other}`, {
        method: "HEAD",
      });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "");
    });
    await t.step(
      "another tenant, an absent or malformed id → one 404",
      async () => {
        const other = await createOk(app);
        const acme = await tenantKey(deps, "acme");
        const bodies = [];
        for (
          const [target, key] of [
            [other, acme],
            ["session:NOPE", TEST_ADMIN_KEY],
            ["nope", TEST_ADMIN_KEY],
            [`session:${"a".repeat(200)}`, TEST_ADMIN_KEY],
          ]
        ) {
          const b = await assertError(
            await get(target, key),
            "AVTR_SESSION_NOT_FOUND",
          );
          bodies.push({ ...b, request_id: "" });
        }
        for (const b of bodies) assert.deepEqual(b, bodies[0]);
      },
    );
    await t.step("a write-only key → 403", async () => {
      const wo = await tenantKey(deps, "admin", ["sessions:write"]);
      await assertError(await get(id, wo), "AVTR_AUTH_MISSING_SCOPE");
    });
    await t.step("a read-only key of the owner reads it", async () => {
      const other = await createOk(app);
      const ro = await tenantKey(deps, "admin", ["sessions:read"]);
      assert.equal((await get(other, ro)).status, 200);
    });
  } finally {
    await app.close();
  }
});
