import assert from "node:assert/strict";
import { json, StateHeaders, withHeaders } from "../../lib/http.ts";

Deno.test("withHeaders", async (t) => {
  await t.step("copies state headers and extras the response lacks", () => {
    const state = new StateHeaders();
    state.set("X-RateLimit-Limit", "10");
    state.set("x-ratelimit-remaining", " 9 ");
    const res = withHeaders(
      json({ a: 1 }, 200, { "x-ratelimit-limit": "1" }),
      state,
      {
        "x-request-id": "r1",
      },
    );
    assert.equal(
      res.headers.get("x-ratelimit-limit"),
      "1",
      "the response's own wins",
    );
    assert.equal(res.headers.get("x-ratelimit-remaining"), "9");
    assert.equal(res.headers.get("x-request-id"), "r1");
    assert.equal(
      res.headers.get("content-type"),
      "application/json; charset=utf-8",
    );
  });

  await t.step("StateHeaders reflects append and delete", () => {
    const state = new StateHeaders();
    state.set("vary", "a");
    state.append("Vary", "b");
    state.set("gone", "x");
    state.delete("Gone");
    assert.deepEqual([...state.entriesMap()], [["vary", "a, b"]]);
    assert.deepEqual([...state], [["vary", "a, b"]]);
    const res = withHeaders(new Response("x"), state);
    assert.equal(res.headers.get("vary"), "a, b");
    assert.equal(res.headers.has("gone"), false);
  });

  await t.step("plain Headers work too", () => {
    const res = withHeaders(new Response("x"), new Headers({ a: "1" }));
    assert.equal(res.headers.get("a"), "1");
  });

  await t.step(
    "immutable headers: a copy of the response carries them",
    async () => {
      const state = new StateHeaders();
      state.set("x-content-type-options", "nosniff");
      const redirect = Response.redirect("http://localhost/x", 302);
      const res = withHeaders(redirect, state, { "x-request-id": "r2" });
      assert.notEqual(res, redirect);
      assert.equal(res.status, 302);
      assert.equal(res.headers.get("location"), "http://localhost/x");
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.equal(res.headers.get("x-request-id"), "r2");
      await res.body?.cancel();
    },
  );

  await t.step("nothing to add returns the response itself", () => {
    const res = new Response("x");
    assert.equal(withHeaders(res, new StateHeaders()), res);
    assert.equal(withHeaders(res, new Headers()), res);
  });
});

Deno.test("json", async (t) => {
  await t.step(
    "sets the JSON content type over the caller's headers",
    async () => {
      const res = json({ ok: true }, 201, {
        "content-type": "text/plain",
        "cache-control": "no-store",
      });
      assert.equal(res.status, 201);
      assert.equal(
        res.headers.get("content-type"),
        "application/json; charset=utf-8",
      );
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.deepEqual(await res.json(), { ok: true });
    },
  );
});
