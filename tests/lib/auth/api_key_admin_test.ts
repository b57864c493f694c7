import assert from "node:assert/strict";
import {
  getApiKey,
  listApiKeys,
  revokeApiKey,
} from "../../../lib/auth/api_key_admin.ts";
import { createApiKey } from "../../../lib/auth/api_keys.ts";
import { closeDeps } from "../../../lib/wire.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { rejectsWith, setup } from "./_keys.ts";

Deno.test("revokeApiKey() revokes once, reports a repeat, and 404s an unknown key", async () => {
  const { deps, clock } = await setup();
  try {
    const { key } = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    clock.advance(5);
    assert.deepEqual(await revokeApiKey(deps, OPERATOR, key.key_id), {
      alreadyRevoked: false,
    });
    clock.advance(5);
    assert.deepEqual(await revokeApiKey(deps, OPERATOR, key.key_id), {
      alreadyRevoked: true,
    });
    assert.equal(
      (await getApiKey(deps, OPERATOR, key.key_id))!.revoked_at,
      clock.t - 5,
    );
    await rejectsWith(
      revokeApiKey(deps, OPERATOR, "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
      "AVTR_API_KEY_NOT_FOUND",
    );
    await rejectsWith(
      revokeApiKey(deps, OPERATOR, "../x"),
      "AVTR_API_KEY_NOT_FOUND",
    );
    assert.equal(
      await getApiKey(deps, OPERATOR, "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
      null,
    );
    assert.equal(await getApiKey(deps, OPERATOR, "not-an-id"), null);
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("listApiKeys() pages newest first, filters by tenant and refuses bad options", async (t) => {
  const { deps, clock } = await setup();
  try {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const { key } = await createApiKey(deps, OPERATOR, {
        tenant_id: i % 2 === 0 ? "even" : "odd",
        scopes: ["sessions:read"],
        name: `k${i}`,
      });
      ids.push(key.key_id);
    }
    const newestFirst = [...ids].reverse();
    await t.step("all keys, two a page", async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await listApiKeys(deps, OPERATOR, { limit: 2, cursor });
        seen.push(...page.keys.map((k) => k.key_id));
        cursor = page.cursor ?? undefined;
        pages++;
      } while (cursor !== undefined && pages < 10);
      assert.deepEqual(seen, newestFirst);
    });
    await t.step("one tenant", async () => {
      const page = await listApiKeys(deps, OPERATOR, { tenant_id: "even" });
      assert.deepEqual(page.keys.map((k) => k.key_id), [
        ids[4],
        ids[2],
        ids[0],
      ]);
      assert.equal(page.cursor, null);
      assert.equal(page.keys[0].name, "k4");
      const one = await listApiKeys(deps, OPERATOR, {
        tenant_id: "odd",
        limit: 1,
      });
      assert.deepEqual(one.keys.map((k) => k.key_id), [ids[3]]);
      const rest = await listApiKeys(deps, OPERATOR, {
        tenant_id: "odd",
        limit: 1,
        cursor: one.cursor!,
      });
      assert.deepEqual(rest.keys.map((k) => k.key_id), [ids[1]]);
    });
    await t.step(
      "bad cursor, limit and tenant_id → 400 with param",
      async () => {
        await rejectsWith(
          listApiKeys(deps, OPERATOR, { cursor: "!!" }),
          "AVTR_REQUEST_INVALID",
          "cursor",
        );
        await rejectsWith(
          listApiKeys(deps, OPERATOR, { limit: 0 }),
          "AVTR_REQUEST_INVALID",
          "limit",
        );
        await rejectsWith(
          listApiKeys(deps, OPERATOR, { limit: 101 }),
          "AVTR_REQUEST_INVALID",
          "limit",
        );
        await rejectsWith(
          listApiKeys(deps, OPERATOR, { tenant_id: "a b" }),
          "AVTR_REQUEST_INVALID",
          "tenant_id",
        );
      },
    );
  } finally {
    await closeDeps(deps);
  }
});
