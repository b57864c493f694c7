import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  apiKeyLastUsedKey,
  flushLastUsed,
  startLastUsedFlusher,
} from "../../../lib/auth/api_key_usage.ts";
import {
  getApiKey,
  listApiKeys,
  revokeApiKey,
} from "../../../lib/auth/api_key_admin.ts";
import {
  apiKeyKey,
  createApiKey,
  parseApiKey,
  verifyApiKey,
} from "../../../lib/auth/api_keys.ts";
import { closeDeps } from "../../../lib/wire.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { rejectsWith, setup } from "./_keys.ts";

/** Every KV entry as text (KvU64 and bigint included), to scan for secrets. */
async function dumpKv(kv: Deno.Kv): Promise<string> {
  const parts: string[] = [];
  for await (const e of kv.list({ prefix: [] })) {
    parts.push(
      JSON.stringify(
        { key: e.key, value: e.value },
        (_k, v) =>
          typeof v === "bigint"
            ? v.toString()
            : v instanceof Deno.KvU64
            ? v.value.toString()
            : v,
      ),
    );
  }
  return parts.join("\n");
}

Deno.test("createApiKey() returns the plaintext once and stores only a hash of the secret", async () => {
  const { deps, clock } = await setup();
  try {
    const { key, api_key } = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write"],
      name: "CI",
      expires_at: clock.t + 60_000,
    });
    assert.match(api_key, /^avk_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]{43}$/);
    const parsed = parseApiKey(api_key)!;
    assert.equal(parsed.keyId, key.key_id);
    assert.deepEqual(key, {
      key_id: key.key_id,
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write"],
      name: "CI",
      created_at: clock.t,
      expires_at: clock.t + 60_000,
    });
    const rec = await deps.kv.get<Record<string, unknown>>(
      apiKeyKey(key.key_id),
    );
    assert.equal(
      rec.value!.secret_hash,
      createHash("sha256").update(parsed.secret).digest("base64url"),
    );
    const dump = await dumpKv(deps.kv);
    assert.equal(dump.includes(api_key), false);
    assert.equal(dump.includes(parsed.secret), false);
    assert.ok(dump.includes(`"api_keys_by_tenant","acme","${key.key_id}"`));
    assert.equal("secret_hash" in key, false);
    const got = await getApiKey(deps, OPERATOR, key.key_id);
    assert.deepEqual(got, key);
    const listed = await listApiKeys(deps, OPERATOR);
    assert.equal(JSON.stringify(listed).includes(parsed.secret), false);
    assert.equal(JSON.stringify(listed).includes("secret_hash"), false);
    assert.equal(JSON.stringify(got).includes("secret_hash"), false);
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("createApiKey() refuses invalid input with AVTR_REQUEST_INVALID and the field's param", async (t) => {
  const { deps, clock } = await setup();
  const ok = { tenant_id: "acme", scopes: ["sessions:read"] };
  const cases: [string, Record<string, unknown>, string][] = [
    ["tenant_id missing", { scopes: ["sessions:read"] }, "tenant_id"],
    ["tenant_id empty", { ...ok, tenant_id: "" }, "tenant_id"],
    ["tenant_id with a space", { ...ok, tenant_id: "a b" }, "tenant_id"],
    [
      "tenant_id of 65 chars",
      { ...ok, tenant_id: "a".repeat(65) },
      "tenant_id",
    ],
    ["tenant_id not a string", { ...ok, tenant_id: 7 }, "tenant_id"],
    ["scopes missing", { tenant_id: "acme" }, "scopes"],
    ["scopes empty", { ...ok, scopes: [] }, "scopes"],
    ["scopes not an array", { ...ok, scopes: "sessions:read" }, "scopes"],
    [
      "scope unknown",
      { ...ok, scopes: ["sessions:read", "root"] },
      "scopes[1]",
    ],
    [
      "scope repeated",
      { ...ok, scopes: ["keys:admin", "sessions:read", "keys:admin"] },
      "scopes[2]",
    ],
    ["name empty", { ...ok, name: "" }, "name"],
    ["name of 101 chars", { ...ok, name: "n".repeat(101) }, "name"],
    [
      "expires_at in the past",
      { ...ok, expires_at: clock.t - 1 },
      "expires_at",
    ],
    ["expires_at now", { ...ok, expires_at: clock.t }, "expires_at"],
    [
      "expires_at fractional",
      { ...ok, expires_at: clock.t + 0.5 },
      "expires_at",
    ],
    ["expires_at a string", { ...ok, expires_at: "tomorrow" }, "expires_at"],
    ["unknown field", { ...ok, owner: "me" }, "owner"],
  ];
  try {
    for (const [name, input, param] of cases) {
      await t.step(name, async () => {
        await rejectsWith(
          createApiKey(deps, OPERATOR, input as never),
          "AVTR_REQUEST_INVALID",
          param,
        );
      });
    }
    await t.step("boundaries are accepted", async () => {
      const { key } = await createApiKey(deps, OPERATOR, {
        tenant_id: "A-z_0".padEnd(64, "x"),
        scopes: ["keys:admin"],
        name: "n".repeat(100),
        expires_at: clock.t + 1,
      });
      assert.equal(key.tenant_id.length, 64);
    });
    let count = 0;
    for await (const _ of deps.kv.list({ prefix: ["api_keys"] })) count++;
    assert.equal(count, 1, "no refused input left a record");
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("verifyApiKey() resolves a live key and refuses unknown, wrong, revoked and expired ones", async (t) => {
  const { deps, clock } = await setup();
  try {
    const { key, api_key } = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
      expires_at: clock.t + 10_000,
    });
    await t.step("live key → principal", async () => {
      assert.deepEqual(await verifyApiKey(deps, api_key), {
        kind: "api_key",
        tenantId: "acme",
        scopes: ["sessions:read"],
        keyId: key.key_id,
      });
    });
    await t.step("malformed → AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(verifyApiKey(deps, "nope"), "AVTR_AUTH_INVALID_KEY");
      await rejectsWith(
        verifyApiKey(deps, api_key + "x"),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step("right id, wrong secret → AVTR_AUTH_INVALID_KEY", async () => {
      const forged = `avk_${key.key_id}_${"A".repeat(43)}`;
      await rejectsWith(verifyApiKey(deps, forged), "AVTR_AUTH_INVALID_KEY");
    });
    await t.step("unknown id → AVTR_AUTH_INVALID_KEY", async () => {
      const other = `avk_01ARZ3NDEKTSV4RRFFQ69G5FAV_${api_key.slice(-43)}`;
      await rejectsWith(verifyApiKey(deps, other), "AVTR_AUTH_INVALID_KEY");
    });
    await t.step("at expires_at → AVTR_AUTH_EXPIRED_TOKEN", async () => {
      clock.advance(9_999);
      await verifyApiKey(deps, api_key);
      clock.advance(1);
      await rejectsWith(verifyApiKey(deps, api_key), "AVTR_AUTH_EXPIRED_TOKEN");
    });
    await t.step("revoked → AVTR_AUTH_INVALID_KEY", async () => {
      const fresh = await createApiKey(deps, OPERATOR, {
        tenant_id: "acme",
        scopes: ["sessions:read"],
      });
      await verifyApiKey(deps, fresh.api_key);
      await revokeApiKey(deps, OPERATOR, fresh.key.key_id);
      await rejectsWith(
        verifyApiKey(deps, fresh.api_key),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("last_used_at is kept in memory, merged into KV by flushLastUsed() and on close, never moving back", async () => {
  const { deps, clock } = await setup();
  startLastUsedFlusher(deps);
  let closed = false;
  try {
    const { key, api_key } = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    clock.advance(1000);
    await verifyApiKey(deps, api_key);
    const usedAt = clock.t;
    // Not written by the request itself: only the flush writes.
    assert.equal(
      (await deps.kv.get(apiKeyLastUsedKey(key.key_id))).value,
      null,
    );
    // Views merge the pending stamp already.
    assert.equal(
      (await getApiKey(deps, OPERATOR, key.key_id))!.last_used_at,
      usedAt,
    );
    await flushLastUsed(deps);
    const stored = await deps.kv.get<Deno.KvU64>(
      apiKeyLastUsedKey(key.key_id),
    );
    assert.equal(Number(stored.value!.value), usedAt);
    assert.equal(
      (await listApiKeys(deps, OPERATOR)).keys[0].last_used_at,
      usedAt,
    );

    // Another instance flushed a newer stamp: an older local one must not win.
    await deps.kv.set(
      apiKeyLastUsedKey(key.key_id),
      new Deno.KvU64(BigInt(usedAt + 50_000)),
    );
    clock.advance(10);
    await verifyApiKey(deps, api_key);
    await flushLastUsed(deps);
    const merged = await deps.kv.get<Deno.KvU64>(
      apiKeyLastUsedKey(key.key_id),
    );
    assert.equal(Number(merged.value!.value), usedAt + 50_000);

    // Closing flushes what is pending.
    clock.advance(100_000);
    await verifyApiKey(deps, api_key);
    const lastUse = clock.t;
    await closeDeps(deps, false);
    closed = true;
    const final = await deps.kv.get<Deno.KvU64>(apiKeyLastUsedKey(key.key_id));
    assert.equal(Number(final.value!.value), lastUse);
  } finally {
    if (!closed) await closeDeps(deps, false);
    deps.kv.close();
  }
});
