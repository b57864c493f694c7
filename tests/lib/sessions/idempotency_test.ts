import assert from "node:assert/strict";
import { ApiError } from "../../../lib/errors.ts";
import {
  beginIdempotent,
  canonicalJson,
  fingerprintBody,
  IDEMPOTENCY_TTL_MS,
  idempotencyKey,
  parseIdempotencyKey,
  releaseIdempotent,
} from "../../../lib/sessions/idempotency.ts";
import { testApp, TestClock } from "../../_helpers.ts";

Deno.test("parseIdempotencyKey() accepts 1..255 printable ASCII only", () => {
  assert.equal(parseIdempotencyKey(null), undefined);
  assert.equal(parseIdempotencyKey("a b~!"), "a b~!");
  for (const bad of ["", "x".repeat(256), "\u00e9", "a\x7fb", "a\nb"]) {
    assert.throws(
      () => parseIdempotencyKey(bad),
      (e) =>
        e instanceof ApiError && e.code === "AVTR_REQUEST_INVALID" &&
        e.param === "Idempotency-Key",
    );
  }
});

Deno.test("canonicalJson() sorts keys at every level", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("fingerprintBody() is keyed and never contains the body", async () => {
  const a = await testApp();
  const b = await testApp({
    TOKEN_SECRET: "other-secret-0123456789abcdefghijklmnopqr",
  });
  try {
    const body = { secret: "sk-FINGERPRINT" };
    const fa = fingerprintBody(a.app.deps, body);
    assert.equal(fa, fingerprintBody(a.app.deps, { ...body }));
    assert.notEqual(fa, fingerprintBody(b.app.deps, body));
    assert.notEqual(fa, fingerprintBody(a.app.deps, { secret: "sk-other" }));
    assert.doesNotMatch(fa, /FINGERPRINT/);
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("beginIdempotent() claims, detects mismatches, and reclaims abandoned or expired keys", async (t) => {
  const clock = new TestClock();
  const app = await testApp({ START_TIMEOUT_MS: "200" }, { clock });
  const deps = app.app.deps;
  try {
    const first = await beginIdempotent(deps, "acme", "k", "fp1");
    assert.equal(first.kind, "claimed");
    await t.step("the claim expires with the key's 24 h", async () => {
      const e = await deps.kv.get<{ expires_at: number; state: string }>(
        idempotencyKey("acme", "k"),
      );
      assert.equal(e.value?.state, "pending");
      assert.equal(e.value?.expires_at, clock.now() + IDEMPOTENCY_TTL_MS);
    });
    await t.step("another body → 422 even while pending", async () => {
      await assert.rejects(
        beginIdempotent(deps, "acme", "k", "fp2"),
        (e) => e instanceof ApiError && e.code === "AVTR_IDEMPOTENCY_MISMATCH",
      );
    });
    await t.step(
      "a duplicate of a stuck attempt gives up with a retryable 503",
      async () => {
        await assert.rejects(
          beginIdempotent(deps, "acme", "k", "fp1"),
          (e) =>
            e instanceof ApiError &&
            e.code === "AVTR_SESSION_STATE_UNAVAILABLE",
        );
      },
    );
    await t.step("an abandoned pending claim can be taken over", async () => {
      clock.advance(200 + 30_000);
      const again = await beginIdempotent(deps, "acme", "k", "fp2");
      assert.equal(again.kind, "claimed");
      if (again.kind === "claimed" && first.kind === "claimed") {
        // The stale owner can no longer release the new claim.
        await releaseIdempotent(deps, first.claim);
        assert.ok((await deps.kv.get(idempotencyKey("acme", "k"))).value);
        await releaseIdempotent(deps, again.claim);
        assert.equal(
          (await deps.kv.get(idempotencyKey("acme", "k"))).value,
          null,
        );
      }
    });
    await t.step("keys are per tenant", async () => {
      const a = await beginIdempotent(deps, "acme", "shared", "fp1");
      const b = await beginIdempotent(deps, "beta", "shared", "fp2");
      assert.equal(a.kind, "claimed");
      assert.equal(b.kind, "claimed");
    });
  } finally {
    await app.close();
  }
});
