import assert from "node:assert/strict";
import { apiKeyLastUsedKey } from "../../../lib/auth/api_key_usage.ts";
import { revokeApiKey } from "../../../lib/auth/api_key_admin.ts";
import { createApiKey } from "../../../lib/auth/api_keys.ts";
import {
  authenticate,
  credentialFrom,
  initAuth,
  MAX_PREFETCH,
  safeEqual,
} from "../../../lib/auth/authenticate.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { countingKv, ctxFor, rejectsWith } from "./_keys.ts";

/** A clock moved by hand (lib tests stay off the app and its route manifest). */
class TestClock {
  constructor(public t = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

const TEST_ADMIN_KEY = "test-admin-key-0123456789abcdefghijklmnop";

async function setup(env: Record<string, string> = {}) {
  const clock = new TestClock();
  const inner = await Deno.openKv(":memory:");
  const counting = countingKv(inner);
  const deps = await createDeps({
    env: {
      KV_PATH: ":memory:",
      TOKEN_SECRET: "x".repeat(32),
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      ...env,
    },
    kv: counting.kv,
    now: clock.now,
    log: memoryLogger(),
  });
  initAuth(deps);
  return { deps, clock, counting };
}

Deno.test("credentialFrom() reads Authorization: Bearer and x-api-key", async (t) => {
  const cases: [string, HeadersInit, string | null][] = [
    ["bearer", { authorization: "Bearer abc" }, "abc"],
    ["bearer, any case", { authorization: "bearer abc" }, "abc"],
    ["x-api-key", { "x-api-key": "abc" }, "abc"],
    ["x-api-key trimmed", { "x-api-key": "  abc " }, "abc"],
    ["none", {}, null],
    ["empty x-api-key", { "x-api-key": "  " }, null],
    ["basic scheme is not a credential", { authorization: "Basic abc" }, null],
  ];
  for (const [name, headers, want] of cases) {
    await t.step(name, () => {
      const req = new Request("http://localhost/", { headers });
      assert.equal(credentialFrom(req), want);
    });
  }
});

Deno.test("safeEqual() compares whole strings", () => {
  assert.equal(safeEqual("abc", "abc"), true);
  assert.equal(safeEqual("abc", "abd"), false);
  assert.equal(safeEqual("abc", "abcd"), false);
  assert.equal(safeEqual("", ""), true);
  assert.equal(safeEqual("", "a"), false);
});

Deno.test("authenticate() refuses a request without credentials with 401 AVTR_AUTH_MISSING_CREDENTIALS", async () => {
  const { deps } = await setup();
  try {
    await rejectsWith(
      authenticate(ctxFor(deps), "sessions:read"),
      "AVTR_AUTH_MISSING_CREDENTIALS",
    );
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() accepts ADMIN_API_KEY in both header forms as tenant admin with every scope", async (t) => {
  const { deps } = await setup();
  try {
    for (
      const headers of [
        { authorization: `Bearer ${TEST_ADMIN_KEY}` } as Record<string, string>,
        { "x-api-key": TEST_ADMIN_KEY },
      ]
    ) {
      await t.step(Object.keys(headers)[0], async () => {
        const ctx = ctxFor(deps, headers);
        const { principal } = await authenticate(ctx, "keys:admin");
        assert.equal(principal.kind, "admin_key");
        assert.equal(principal.tenantId, "admin");
        assert.deepEqual([...principal.scopes].sort(), [
          "keys:admin",
          "sessions:read",
          "sessions:write",
        ]);
        assert.equal(ctx.state.principal, principal);
      });
    }
    await t.step("a near miss is invalid", async () => {
      await rejectsWith(
        authenticate(
          ctxFor(deps, { "x-api-key": TEST_ADMIN_KEY.slice(0, -1) }),
          "sessions:read",
        ),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() accepts a key-shaped ADMIN_API_KEY as admin, and API keys beside it", async () => {
  // The admin comparison is skipped for key-shaped credentials only while the admin
  // key is not key-shaped itself.
  const adminKey = "avk_" + "0".repeat(26) + "_" + "a".repeat(43);
  const { deps } = await setup({ ADMIN_API_KEY: adminKey });
  try {
    const admin = await authenticate(
      ctxFor(deps, { authorization: `Bearer ${adminKey}` }),
      "keys:admin",
    );
    assert.equal(admin.principal.kind, "admin_key");
    const { api_key } = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    const user = await authenticate(
      ctxFor(deps, { authorization: `Bearer ${api_key}` }),
      "sessions:read",
    );
    assert.equal(user.principal.tenantId, "acme");
    await rejectsWith(
      authenticate(
        ctxFor(deps, { authorization: `Bearer ${adminKey.slice(0, -1)}b` }),
        "sessions:read",
      ),
      "AVTR_AUTH_INVALID_KEY",
    );
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() resolves an API key and the prefetch keys in one getMany, with no KV write", async (t) => {
  const { deps, counting } = await setup();
  try {
    const { key, api_key } = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
    });
    await counting.inner.set(["probe", 1], "one");
    await counting.inner.set(["probe", 2], "two");
    for (
      const headers of [
        { authorization: `Bearer ${api_key}` } as Record<string, string>,
        { "x-api-key": api_key },
      ]
    ) {
      await t.step(Object.keys(headers)[0], async () => {
        counting.calls.clear();
        const { principal, entries } = await authenticate(
          ctxFor(deps, headers),
          "sessions:read",
          [["probe", 2], ["probe", 1], ["probe", 3]],
        );
        assert.deepEqual(principal, {
          kind: "api_key",
          tenantId: "acme",
          scopes: ["sessions:read"],
          keyId: key.key_id,
        });
        assert.deepEqual(entries.map((e) => e.value), ["two", "one", null]);
        assert.deepEqual(Object.fromEntries(counting.calls), { getMany: 1 });
      });
    }
    assert.equal(
      (await counting.inner.get(apiKeyLastUsedKey(key.key_id))).value,
      null,
      "use is not written per request",
    );
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() answers by the key's state on every call: invalid, revoked, expired, missing scope", async (t) => {
  const { deps, clock } = await setup();
  try {
    const live = await createApiKey(deps, OPERATOR, {
      tenant_id: "acme",
      scopes: ["sessions:read"],
      expires_at: clock.t + 60_000,
    });
    const auth = (key: string, scope: "sessions:read" | "sessions:write") =>
      authenticate(ctxFor(deps, { authorization: `Bearer ${key}` }), scope);
    await t.step("unrecognized → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(
        auth("garbage", "sessions:read"),
        "AVTR_AUTH_INVALID_KEY",
      );
      await rejectsWith(
        auth(`avk_${live.key.key_id}_${"B".repeat(43)}`, "sessions:read"),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step(
      "a JWT-shaped credential without an IdP is invalid",
      async () => {
        await rejectsWith(
          auth("aaa.bbb.ccc", "sessions:read"),
          "AVTR_AUTH_INVALID_KEY",
        );
      },
    );
    await t.step("missing scope → 403 AVTR_AUTH_MISSING_SCOPE", async () => {
      const ctx = ctxFor(deps, { "x-api-key": live.api_key });
      await rejectsWith(
        authenticate(ctx, "sessions:write"),
        "AVTR_AUTH_MISSING_SCOPE",
      );
      assert.equal(ctx.state.principal?.tenantId, "acme");
    });
    await t.step(
      "revoked → 401 AVTR_AUTH_INVALID_KEY on the next call",
      async () => {
        const other = await createApiKey(deps, OPERATOR, {
          tenant_id: "acme",
          scopes: ["sessions:read"],
        });
        await auth(other.api_key, "sessions:read");
        await revokeApiKey(deps, OPERATOR, other.key.key_id);
        await rejectsWith(
          auth(other.api_key, "sessions:read"),
          "AVTR_AUTH_INVALID_KEY",
        );
      },
    );
    await t.step("expired → 401 AVTR_AUTH_EXPIRED_TOKEN", async () => {
      await auth(live.api_key, "sessions:read");
      clock.advance(60_000);
      await rejectsWith(
        auth(live.api_key, "sessions:read"),
        "AVTR_AUTH_EXPIRED_TOKEN",
      );
    });
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() refuses more than MAX_PREFETCH prefetch keys", async () => {
  const { deps } = await setup();
  try {
    const keys = Array.from({ length: MAX_PREFETCH + 1 }, (_, i) => ["k", i]);
    await assert.rejects(
      authenticate(
        ctxFor(deps, { "x-api-key": TEST_ADMIN_KEY }),
        "sessions:read",
        keys,
      ),
      RangeError,
    );
  } finally {
    await closeDeps(deps);
  }
});
