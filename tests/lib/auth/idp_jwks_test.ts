/**
 * Where the identity provider's keys come from: IDP_JWKS_URL served over HTTP (and 503
 * while it is unreachable), and a malformed inline IDP_JWKS refused at start.
 */
import assert from "node:assert/strict";
import { authenticate, initAuth } from "../../../lib/auth/authenticate.ts";
import { ConfigError } from "../../../lib/config.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { setOrgMapping } from "../../../lib/auth/idp_orgs.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { ApiError } from "../../../lib/errors.ts";
import {
  AUDIENCE,
  GOOD,
  ISSUER,
  JWKS,
  NOW_S,
  setup,
  sign,
  stranger,
} from "./_idp.ts";
import { ctxFor, rejectsWith } from "./_keys.ts";

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
