import assert from "node:assert/strict";
import { createDeps } from "../../../lib/wire.ts";
import { ApiError } from "../../../lib/errors.ts";
import { base64url, fromBase64url } from "../../../lib/ids.ts";
import { memoryLogger } from "../../../lib/log.ts";
import {
  deriveKey,
  mintToken,
  TOKEN_TTL_MS,
  verifyMediaToken,
  verifyToken,
} from "../../../lib/auth/tokens.ts";
import { TEST_TOKEN_SECRET, TestClock } from "../../_helpers.ts";

async function depsWith(secret: string | undefined, clock = new TestClock()) {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:", TOKEN_SECRET: secret },
    now: clock.now,
    log: memoryLogger(),
  });
  return { deps, clock };
}

const SID = "session:01HXAMPLE0000000000000000A";

Deno.test("mintToken() and verifyToken() round-trip and refuse every fault", async (t) => {
  const { deps, clock } = await depsWith(TEST_TOKEN_SECRET);
  try {
    const { token, expiresAt } = mintToken(deps, SID, "client");
    await t.step("compact and URL-safe, 5-minute expiry", () => {
      assert.match(token, /^[A-Za-z0-9._-]+$/);
      assert.ok(token.length < 300);
      assert.equal(expiresAt, clock.now() + TOKEN_TTL_MS);
      assert.equal(encodeURIComponent(token), token);
    });
    await t.step("verifies for its session and purpose", () => {
      assert.deepEqual(
        verifyToken(deps, token, { sessionId: SID, purposes: ["client"] }),
        {
          ok: true,
          sessionId: SID,
          purpose: "client",
          expiresAt,
        },
      );
      assert.deepEqual(verifyMediaToken(deps, token, SID), { ok: true });
    });
    await t.step("two mints differ (nonce)", () => {
      assert.notEqual(mintToken(deps, SID, "client").token, token);
    });
    const invalid = { ok: false, code: "AVTR_AUTH_INVALID_KEY" };
    await t.step("missing or malformed", () => {
      for (
        const bad of [
          null,
          undefined,
          "",
          "mt1",
          "mt1..",
          "x.y.z",
          "mt1.a.b",
          token + ".x",
          "mt2" + token.slice(3),
          "x".repeat(2000),
        ]
      ) {
        assert.deepEqual(
          verifyMediaToken(deps, bad, SID),
          invalid,
          String(bad),
        );
      }
    });
    await t.step("tampered payload or signature", () => {
      const [v, payload, sig] = token.split(".");
      const json = JSON.parse(new TextDecoder().decode(fromBase64url(payload)));
      const forged = base64url(
        new TextEncoder().encode(
          JSON.stringify({ ...json, e: json.e + 3600_000 }),
        ),
      );
      assert.deepEqual(
        verifyMediaToken(deps, `${v}.${forged}.${sig}`, SID),
        invalid,
      );
      const flipped = sig.slice(0, -2) + (sig.at(-2) === "A" ? "B" : "A") +
        sig.at(-1);
      assert.deepEqual(
        verifyMediaToken(deps, `${v}.${payload}.${flipped}`, SID),
        invalid,
      );
      assert.deepEqual(
        verifyMediaToken(deps, `${v}.${payload}.${sig.slice(0, 20)}`, SID),
        invalid,
      );
    });
    await t.step("another session", () => {
      assert.deepEqual(verifyMediaToken(deps, token, SID + "B"), invalid);
    });
    await t.step("wrong purpose", () => {
      const session = mintToken(deps, SID, "session").token;
      assert.deepEqual(
        verifyToken(deps, session, { sessionId: SID, purposes: ["client"] }),
        invalid,
      );
      assert.deepEqual(
        verifyToken(deps, token, { sessionId: SID, purposes: ["session"] }),
        invalid,
      );
      assert.deepEqual(verifyMediaToken(deps, session, SID), { ok: true });
    });
    await t.step("expired at exactly 5 minutes", () => {
      clock.advance(TOKEN_TTL_MS - 1);
      assert.deepEqual(verifyMediaToken(deps, token, SID), { ok: true });
      clock.advance(1);
      assert.deepEqual(verifyMediaToken(deps, token, SID), {
        ok: false,
        code: "AVTR_AUTH_EXPIRED_TOKEN",
      });
    });
    await t.step(
      "an expired token of another session is invalid, not expired",
      () => {
        assert.deepEqual(verifyMediaToken(deps, token, SID + "B"), invalid);
      },
    );
  } finally {
    deps.kv.close();
  }
});

Deno.test("verifyToken() refuses tokens signed with another secret", async () => {
  const a = await depsWith(TEST_TOKEN_SECRET);
  const b = await depsWith("another-secret-0123456789abcdefghijklmnopq");
  try {
    const { token } = mintToken(a.deps, SID, "client");
    assert.deepEqual(verifyMediaToken(b.deps, token, SID), {
      ok: false,
      code: "AVTR_AUTH_INVALID_KEY",
    });
  } finally {
    a.deps.kv.close();
    b.deps.kv.close();
  }
});

Deno.test("mintToken() throws 503 AVTR_SESSION_STATE_UNAVAILABLE without a usable secret", async () => {
  const { deps } = await depsWith("short");
  try {
    assert.throws(
      () => mintToken(deps, SID, "client"),
      (e) =>
        e instanceof ApiError && e.code === "AVTR_SESSION_STATE_UNAVAILABLE" &&
        e.status === 503,
    );
    assert.throws(() => deriveKey(deps, "x"), ApiError);
    assert.deepEqual(verifyMediaToken(deps, "mt1.a.b", SID), {
      ok: false,
      code: "AVTR_AUTH_INVALID_KEY",
    });
  } finally {
    deps.kv.close();
  }
});

Deno.test("deriveKey() separates domains", async () => {
  const { deps } = await depsWith(TEST_TOKEN_SECRET);
  try {
    assert.notDeepEqual(deriveKey(deps, "a"), deriveKey(deps, "b"));
    assert.deepEqual(deriveKey(deps, "a"), deriveKey(deps, "a"));
  } finally {
    deps.kv.close();
  }
});
