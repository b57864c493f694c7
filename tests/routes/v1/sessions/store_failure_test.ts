import assert from "node:assert/strict";
import { createApp } from "../../../../app.ts";
import { memoryLogger } from "../../../../lib/log.ts";
import {
  TEST_ADMIN_KEY,
  TEST_TOKEN_SECRET,
  type TestApp,
} from "../../../_helpers.ts";
import { assertError, createOk, driveTo, validBody } from "./_helpers.ts";

/** A real KV whose every operation rejects while `broken` is set. */
function breakableKv(
  kv: Deno.Kv,
): { kv: Deno.Kv; broken: boolean; commitsBroken: boolean } {
  const state = { kv: kv, broken: false, commitsBroken: false };
  const fail = () => Promise.reject(new Error("kv down"));
  state.kv = new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function" || prop === "close") {
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (...args: unknown[]) => {
        const atomicOnly = state.commitsBroken && prop === "atomic";
        if (!state.broken && !atomicOnly) return value.apply(target, args);
        if (prop === "atomic") {
          const op = value.apply(target, args) as Deno.AtomicOperation;
          const proxy: Deno.AtomicOperation = new Proxy(op, {
            get(o, p) {
              if (p === "commit") return fail;
              const v = Reflect.get(o, p, o);
              return typeof v === "function"
                ? (...a: unknown[]) => {
                  v.apply(o, a);
                  return proxy;
                }
                : v;
            },
          });
          return proxy;
        }
        if (prop === "list") {
          return {
            cursor: "",
            [Symbol.asyncIterator]() {
              return { next: fail };
            },
          };
        }
        return fail();
      };
    },
  });
  return state;
}

Deno.test("session endpoints answer 503 AVTR_SESSION_STATE_UNAVAILABLE while the store fails", async (t) => {
  const real = await Deno.openKv(":memory:");
  const store = breakableKv(real);
  const log = memoryLogger();
  const built = await createApp({
    env: {
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      RENDER_MAX_SESSIONS: "8",
    },
    kv: store.kv,
    log,
  });
  const app: TestApp = {
    app: built,
    log,
    clock: undefined,
    request: (path, init) =>
      built.handler(new Request(`http://localhost${path}`, init)),
    close: () => built.close(),
  };
  const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  try {
    const id = await createOk(app);
    await driveTo(built.deps, id, "active");
    store.broken = true;
    const calls: [string, string, RequestInit][] = [
      ["create", "/v1/sessions", {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify(validBody()),
      }],
      ["create with Idempotency-Key", "/v1/sessions", {
        method: "POST",
        headers: {
          ...auth,
          "content-type": "application/json",
          "idempotency-key": "k1",
        },
        body: JSON.stringify(validBody()),
      }],
      ["status", `/v1/sessions/${id}`, { headers: auth }],
      ["status alias", `/v1/sessions/${id}/status`, { headers: auth }],
      ["end", `/v1/sessions/${id}/end`, { method: "POST", headers: auth }],
      ["end alias", `/v1/sessions/${id}`, { method: "DELETE", headers: auth }],
      ["client-token", `/v1/sessions/${id}/client-token`, {
        method: "POST",
        headers: auth,
      }],
      ["ws-token", `/v1/sessions/${id}/ws-token`, {
        method: "POST",
        headers: auth,
      }],
    ];
    for (const [name, path, init] of calls) {
      await t.step(name, async () => {
        const body = await assertError(
          await app.request(path, init),
          "AVTR_SESSION_STATE_UNAVAILABLE",
        );
        assert.ok(body.retry_after! >= 1);
        assert.doesNotMatch(JSON.stringify(body), /kv down/);
      });
    }
    await t.step("a failed create holds no slot and no credential", () => {
      assert.equal(built.deps.renderSlots.inUse, 1);
      assert.equal(built.deps.vault.size, 1);
    });
    await t.step(
      "a create whose commit fails frees its slot and zeroes its credentials",
      async () => {
        store.broken = false;
        store.commitsBroken = true;
        const res = await app.request("/v1/sessions", calls[0][2]);
        await assertError(res, "AVTR_SESSION_STATE_UNAVAILABLE");
        assert.equal(built.deps.renderSlots.inUse, 1);
        assert.equal(built.deps.vault.size, 1);
        store.commitsBroken = false;
      },
    );
    await t.step("the session is intact once the store is back", async () => {
      store.broken = false;
      const res = await app.request(`/v1/sessions/${id}`, { headers: auth });
      assert.equal((await res.json()).status, "active");
    });
  } finally {
    store.broken = false;
    store.commitsBroken = false;
    await app.close();
    real.close();
  }
});
