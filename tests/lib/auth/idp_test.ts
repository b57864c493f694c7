import assert from "node:assert/strict";
import {
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";
import { authenticate, initAuth } from "../../../lib/auth/authenticate.ts";
import { ConfigError } from "../../../lib/config.ts";
import type { AppDeps } from "../../../lib/deps.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { ApiError, type ErrorCode } from "../../../lib/api/errors.ts";
import { type Ctx, ResponseHeaders } from "../../../lib/api/http.ts";
import { looksLikeJwt } from "../../../lib/auth/idp.ts";
import { deleteOrgMapping, setOrgMapping } from "../../../lib/auth/idp_orgs.ts";
import { memoryLogger } from "../../../lib/log.ts";

const ISSUER = "https://idp.example.test/";
const AUDIENCE = "https://avatar.example.test";
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const NOW_S = Math.floor(NOW / 1000);

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

async function newKey(kid: string): Promise<{ pair: KeyPair; jwk: JWK }> {
  const pair = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...await exportJWK(pair.publicKey), kid, alg: "ES256" };
  return { pair, jwk };
}

const signer = await newKey("k1");
const stranger = await newKey("k1"); // same kid, different key: a forged signature
const JWKS = JSON.stringify({ keys: [signer.jwk] });

async function sign(
  claims: JWTPayload,
  options: { key?: KeyPair; kid?: string; iss?: string; exp?: number } = {},
): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: options.kid ?? "k1" })
    .setIssuer(options.iss ?? ISSUER)
    .setIssuedAt(NOW_S - 60);
  if (options.exp !== -1) jwt.setExpirationTime(options.exp ?? NOW_S + 600);
  return await jwt.sign((options.key ?? signer.pair).privateKey);
}

const GOOD: JWTPayload = {
  sub: "user-1",
  aud: AUDIENCE,
  azp: "console-app",
  org_id: "org_acme",
  scope: "sessions:read openid sessions:write",
};

function ctxFor(deps: AppDeps, headers: HeadersInit): Ctx {
  const req = new Request("http://localhost/v1/x", { headers });
  return {
    req,
    url: new URL(req.url),
    params: {},
    state: { requestId: "r", startedAt: 0, headers: new ResponseHeaders() },
    deps,
    remoteAddr: "127.0.0.1",
    next: () => Promise.reject(new Error("no chain")),
  };
}

async function rejectsWith(p: Promise<unknown>, code: ErrorCode) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ApiError, `expected ApiError, got ${err}`);
    assert.equal(err.code, code);
    return true;
  });
}

async function setup(env: Record<string, string>) {
  const inner = await Deno.openKv(":memory:");
  const calls = new Map<string, number>();
  const kv = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
  const deps = await createDeps({
    env: {
      KV_PATH: ":memory:",
      TOKEN_SECRET: "x".repeat(32),
      IDP_AUDIENCE: AUDIENCE,
      ...env,
    },
    kv,
    now: () => NOW,
    log: memoryLogger(),
  });
  initAuth(deps);
  return { deps, calls, inner };
}

Deno.test("looksLikeJwt() tells compact JWTs from API keys", () => {
  assert.equal(looksLikeJwt("aaa.bbb.ccc"), true);
  assert.equal(looksLikeJwt(`avk_${"A".repeat(26)}_${"b".repeat(43)}`), false);
  assert.equal(looksLikeJwt("aaa.bbb."), false);
  assert.equal(looksLikeJwt("a.b.c.d"), false);
});

Deno.test("authenticate() with an inline IDP_JWKS token covers every identity-provider case", async (t) => {
  const { deps, calls, inner } = await setup({
    IDP_ISSUER: ISSUER,
    IDP_JWKS: JWKS,
    IDP_AZP_ALLOWLIST: "console-app, other-app",
  });
  const auth = (
    token: string,
    scope: "sessions:read" | "keys:admin" = "sessions:read",
    prefetch: Deno.KvKey[] = [],
  ) =>
    authenticate(
      ctxFor(deps, { authorization: `Bearer ${token}` }),
      scope,
      prefetch,
    );
  try {
    await setOrgMapping(deps, "org_acme", "acme");
    await inner.set(["probe"], "p");
    await t.step(
      "valid token → idp principal of the mapped tenant, one getMany",
      async () => {
        calls.clear();
        const { principal, entries } = await auth(
          await sign(GOOD),
          "sessions:read",
          [["probe"]],
        );
        assert.deepEqual(principal, {
          kind: "idp",
          tenantId: "acme",
          scopes: ["sessions:read", "sessions:write"],
          subject: "user-1",
        });
        assert.deepEqual(entries.map((e) => e.value), ["p"]);
        assert.deepEqual(Object.fromEntries(calls), { getMany: 1 });
      },
    );
    await t.step("x-api-key carries a token too", async () => {
      const ctx = ctxFor(deps, { "x-api-key": await sign(GOOD) });
      assert.equal(
        (await authenticate(ctx, "sessions:write")).principal.kind,
        "idp",
      );
    });
    await t.step(
      "scope not granted → 403 AVTR_AUTH_MISSING_SCOPE",
      async () => {
        await rejectsWith(
          auth(await sign(GOOD), "keys:admin"),
          "AVTR_AUTH_MISSING_SCOPE",
        );
        await rejectsWith(
          auth(await sign({ ...GOOD, scope: undefined })),
          "AVTR_AUTH_MISSING_SCOPE",
        );
      },
    );
    await t.step(
      "a keys:admin scope claim is never granted: IdP principals are tenant-scoped",
      async () => {
        const token = await sign({
          ...GOOD,
          scope: "sessions:read keys:admin sessions:write",
        });
        await rejectsWith(auth(token, "keys:admin"), "AVTR_AUTH_MISSING_SCOPE");
        const { principal } = await auth(token);
        assert.deepEqual(principal.scopes, ["sessions:read", "sessions:write"]);
      },
    );
    await t.step("bad signature → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(
        auth(await sign(GOOD, { key: stranger.pair })),
        "AVTR_AUTH_INVALID_KEY",
      );
      const token = await sign(GOOD);
      const [h, p] = token.split(".");
      const other = (await sign({ ...GOOD, sub: "user-2" })).split(".")[2];
      await rejectsWith(auth(`${h}.${p}.${other}`), "AVTR_AUTH_INVALID_KEY");
    });
    await t.step("unknown kid → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(
        auth(await sign(GOOD, { kid: "k9" })),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step("wrong issuer → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(
        auth(await sign(GOOD, { iss: "https://evil.example/" })),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step(
      "aud missing or not naming IDP_AUDIENCE → 401 AVTR_AUTH_INVALID_KEY",
      async () => {
        await rejectsWith(
          auth(await sign({ ...GOOD, aud: undefined })),
          "AVTR_AUTH_INVALID_KEY",
        );
        await rejectsWith(
          auth(await sign({ ...GOOD, aud: "https://other-service.example" })),
          "AVTR_AUTH_INVALID_KEY",
        );
        await rejectsWith(
          auth(await sign({ ...GOOD, aud: ["a", "b"] })),
          "AVTR_AUTH_INVALID_KEY",
        );
        const ok = await auth(
          await sign({ ...GOOD, aud: ["https://other.example", AUDIENCE] }),
        );
        assert.equal(ok.principal.tenantId, "acme");
      },
    );
    await t.step(
      "a sub that is not a string → 401 AVTR_AUTH_INVALID_KEY",
      async () => {
        for (const sub of [{ toString: 0 }, 42, ""]) {
          await rejectsWith(
            auth(await sign({ ...GOOD, sub } as unknown as JWTPayload)),
            "AVTR_AUTH_INVALID_KEY",
          );
        }
      },
    );
    await t.step("malformed → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(auth("aaaa.bbbb.cccc"), "AVTR_AUTH_INVALID_KEY");
      const [h, , s] = (await sign(GOOD)).split(".");
      await rejectsWith(auth(`${h}.bm90LWpzb24.${s}`), "AVTR_AUTH_INVALID_KEY");
    });
    await t.step("no exp or no sub → 401 AVTR_AUTH_INVALID_KEY", async () => {
      await rejectsWith(
        auth(await sign(GOOD, { exp: -1 })),
        "AVTR_AUTH_INVALID_KEY",
      );
      await rejectsWith(
        auth(await sign({ ...GOOD, sub: undefined })),
        "AVTR_AUTH_INVALID_KEY",
      );
    });
    await t.step(
      "expired (by the injected clock) → 401 AVTR_AUTH_EXPIRED_TOKEN",
      async () => {
        await rejectsWith(
          auth(await sign(GOOD, { exp: NOW_S - 3600 })),
          "AVTR_AUTH_EXPIRED_TOKEN",
        );
      },
    );
    await t.step(
      "azp not allow-listed or absent → 403 AVTR_AUTH_FORBIDDEN",
      async () => {
        await rejectsWith(
          auth(await sign({ ...GOOD, azp: "rogue" })),
          "AVTR_AUTH_FORBIDDEN",
        );
        await rejectsWith(
          auth(await sign({ ...GOOD, azp: undefined })),
          "AVTR_AUTH_FORBIDDEN",
        );
        const ok = await auth(await sign({ ...GOOD, azp: "other-app" }));
        assert.equal(ok.principal.tenantId, "acme");
      },
    );
    await t.step(
      "org unmapped or absent → 403 AVTR_AUTH_IDP_ORG_UNMAPPED",
      async () => {
        await rejectsWith(
          auth(await sign({ ...GOOD, org_id: "org_nobody" })),
          "AVTR_AUTH_IDP_ORG_UNMAPPED",
        );
        await rejectsWith(
          auth(await sign({ ...GOOD, org_id: undefined })),
          "AVTR_AUTH_IDP_ORG_UNMAPPED",
        );
        await rejectsWith(
          auth(await sign({ ...GOOD, org_id: 42 })),
          "AVTR_AUTH_IDP_ORG_UNMAPPED",
        );
      },
    );
    await t.step("unmapping takes effect on the next request", async () => {
      const token = await sign(GOOD);
      await auth(token);
      assert.equal(await deleteOrgMapping(deps, "org_acme"), true);
      await rejectsWith(auth(token), "AVTR_AUTH_IDP_ORG_UNMAPPED");
    });
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() accepts any azp when IDP_AZP_ALLOWLIST is empty", async () => {
  const { deps } = await setup({ IDP_ISSUER: ISSUER, IDP_JWKS: JWKS });
  try {
    await setOrgMapping(deps, "org_acme", "acme");
    for (const azp of ["anything", undefined]) {
      const token = await sign({ ...GOOD, azp });
      const { principal } = await authenticate(
        ctxFor(deps, { authorization: `Bearer ${token}` }),
        "sessions:read",
      );
      assert.equal(principal.tenantId, "acme");
    }
  } finally {
    await closeDeps(deps);
  }
});

Deno.test("authenticate() verifies tokens against IDP_JWKS_URL served over HTTP, and answers 503 when it is unreachable", async (t) => {
  let jwksRequests = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => {
      jwksRequests++;
      return new Response(JWKS, {
        headers: { "content-type": "application/json" },
      });
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/.well-known/jwks.json`;
  const { deps } = await setup({ IDP_ISSUER: ISSUER, IDP_JWKS_URL: url });
  try {
    await setOrgMapping(deps, "org_acme", "acme");
    const auth = async (token: string) =>
      await authenticate(
        ctxFor(deps, { authorization: `Bearer ${token}` }),
        "sessions:read",
      );
    await t.step("valid token", async () => {
      const { principal } = await auth(await sign(GOOD));
      assert.equal(principal.subject, "user-1");
      assert.equal(jwksRequests, 1);
    });
    await t.step("cached key set is reused", async () => {
      await auth(await sign({ ...GOOD, sub: "user-2" }));
      assert.equal(jwksRequests, 1);
    });
    await t.step("bad signature and expiry still refused", async () => {
      await rejectsWith(
        auth(await sign(GOOD, { key: stranger.pair })),
        "AVTR_AUTH_INVALID_KEY",
      );
      await rejectsWith(
        auth(await sign(GOOD, { exp: NOW_S - 3600 })),
        "AVTR_AUTH_EXPIRED_TOKEN",
      );
    });
  } finally {
    await closeDeps(deps);
    await server.shutdown();
  }

  await t.step(
    "unreachable JWKS → retryable 503 AVTR_SESSION_STATE_UNAVAILABLE",
    async () => {
      const down = await setup({ IDP_ISSUER: ISSUER, IDP_JWKS_URL: url });
      try {
        await assert.rejects(
          authenticate(
            ctxFor(down.deps, { authorization: `Bearer ${await sign(GOOD)}` }),
            "sessions:read",
          ),
          (err: unknown) => {
            assert.ok(err instanceof ApiError);
            assert.equal(err.code, "AVTR_SESSION_STATE_UNAVAILABLE");
            assert.ok(err.retryAfter !== undefined);
            return true;
          },
        );
      } finally {
        await closeDeps(down.deps);
      }
    },
  );
});

Deno.test("initAuth() refuses a malformed inline IDP_JWKS with a ConfigError", async () => {
  for (const bad of ["not json", '{"keys": 3}']) {
    const deps = await createDeps({
      env: {
        KV_PATH: ":memory:",
        IDP_ISSUER: ISSUER,
        IDP_AUDIENCE: AUDIENCE,
        IDP_JWKS: bad,
      },
      log: memoryLogger(),
    });
    try {
      assert.throws(() => initAuth(deps), ConfigError);
    } finally {
      await closeDeps(deps);
    }
  }
});
