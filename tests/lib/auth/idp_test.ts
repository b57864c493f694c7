/**
 * Identity-provider tokens through `authenticate()` with an inline IDP_JWKS: every
 * case of issuer, audience, azp, scope, org and expiry. Keys from IDP_JWKS_URL, and a
 * malformed IDP_JWKS: idp_jwks_test.ts.
 */
import assert from "node:assert/strict";
import type { JWTPayload } from "jose";
import { authenticate } from "../../../lib/auth/authenticate.ts";
import { closeDeps } from "../../../lib/wire.ts";
import { looksLikeJwt } from "../../../lib/auth/idp.ts";
import { deleteOrgMapping, setOrgMapping } from "../../../lib/auth/idp_orgs.ts";
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
