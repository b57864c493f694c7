/**
 * The composition root (lib/wire.ts): where a create's session starts is chosen at
 * wiring, and the create path follows that choice without knowing the topology.
 */
import assert from "node:assert/strict";
import { closeDeps, createDeps } from "../../lib/wire.ts";
import { handOffCreate } from "../../lib/nodes/handoff.ts";
import { createSession } from "../../lib/sessions/create.ts";
import { ApiError } from "../../lib/errors.ts";
import type { HandOffStart } from "../../lib/deps.ts";
import { TEST_TOKEN_SECRET } from "../_helpers.ts";

const NODE_SECRET = "n".repeat(32);

Deno.test("createDeps() wires the media-node hand-off on a control plane, and no hand-off on any other role", async (t) => {
  for (
    const [role, expected] of [
      ["control", handOffCreate],
      ["media", null],
      ["", null],
    ] as const
  ) {
    await t.step(role || "(unset)", async () => {
      const deps = await createDeps({
        env: {
          SERVICE_ROLE: role,
          NODE_SECRET,
          TOKEN_SECRET: TEST_TOKEN_SECRET,
        },
        kv: await Deno.openKv(":memory:"),
      });
      try {
        assert.equal(deps.handOff, expected);
      } finally {
        await closeDeps(deps);
      }
    });
  }
});

Deno.test("createSession() hands the start to deps.handOff and starts nothing here", async () => {
  const deps = await createDeps({
    env: { TOKEN_SECRET: TEST_TOKEN_SECRET },
    kv: await Deno.openKv(":memory:"),
  });
  const seen: HandOffStart[] = [];
  deps.handOff = (_deps, start) => {
    seen.push(start);
    return Promise.reject(
      new ApiError(
        "AVTR_RENDER_CAPACITY",
        "No media node can take a session right now",
      ),
    );
  };
  try {
    const body = {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://engine.example.com/ecep",
          auth_headers: { authorization: "Bearer engine-secret" },
        },
      },
    };
    await assert.rejects(
      createSession(deps, { tenantId: "acme", body, idempotencyKey: "k-1" }),
      (err) => err instanceof ApiError && err.code === "AVTR_RENDER_CAPACITY",
    );
    assert.equal(seen.length, 1);
    assert.equal(seen[0].tenantId, "acme");
    assert.equal(seen[0].body, body);
    assert.match(seen[0].sessionId, /^session:/);
    assert.equal(seen[0].idempotencyKey, "k-1");
    assert.ok(seen[0].claim, "the Idempotency-Key claim crosses with it");
    // Nothing of the session was started on this instance.
    assert.equal(deps.renderSlots.inUse, 0);
    assert.equal(deps.vault.size, 0);
  } finally {
    await closeDeps(deps);
  }
});
