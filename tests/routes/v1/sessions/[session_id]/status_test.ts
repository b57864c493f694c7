import assert from "node:assert/strict";
import { sessionStatusResponseSchema } from "../../../../../lib/api/schemas.ts";
import { TEST_ADMIN_KEY } from "../../../../_helpers.ts";
import {
  assertError,
  createOk,
  keyRequest,
  sessionApp,
  tenantKey,
} from "../_helpers.ts";

Deno.test("GET /v1/sessions/{id}/status is a deprecated alias of the status read", async (t) => {
  const app = await sessionApp();
  try {
    const id = await createOk(app);
    const get = (path: string, key = TEST_ADMIN_KEY) =>
      keyRequest(app, path, { key });
    await t.step(
      "same body as the canonical path, plus the alias headers",
      async () => {
        const alias = await get(`/v1/sessions/${id}/status`);
        const canonical = await get(`/v1/sessions/${id}`);
        assert.equal(alias.status, 200);
        assert.equal(alias.headers.get("deprecation"), "true");
        assert.equal(
          alias.headers.get("link"),
          `</v1/sessions/${id}>; rel="successor-version"`,
        );
        assert.deepEqual(
          sessionStatusResponseSchema.parse(await alias.json()),
          await canonical.json(),
        );
      },
    );
    await t.step("errors match the canonical path's", async () => {
      const acme = await tenantKey(app.app.deps, "acme");
      const res = await get(`/v1/sessions/${id}/status`, acme);
      assert.equal(res.headers.get("deprecation"), "true");
      await assertError(res, "AVTR_SESSION_NOT_FOUND");
      const missing = await app.request(`/v1/sessions/${id}/status`);
      assert.equal(missing.headers.get("deprecation"), "true");
      await assertError(missing, "AVTR_AUTH_MISSING_CREDENTIALS");
    });
  } finally {
    await app.close();
  }
});
