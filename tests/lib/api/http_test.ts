import assert from "node:assert/strict";
import { json, ResponseHeaders, withHeaders } from "../../../lib/api/http.ts";
import { plainPathname } from "../../../lib/api/router.ts";

Deno.test("withHeaders", async (t) => {
  await t.step("copies state headers and extras the response lacks", () => {
    const state = new ResponseHeaders();
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

  await t.step("ResponseHeaders reflects append and delete", () => {
    const state = new ResponseHeaders();
    state.set("vary", "a");
    state.append("Vary", "b");
    state.set("gone", "x");
    state.delete("Gone");
    assert.deepEqual([...state], [["vary", "a, b"]]);
    assert.equal(state.get("VARY"), "a, b");
    assert.equal(state.has("gone"), false);
    const res = withHeaders(new Response("x"), state);
    assert.equal(res.headers.get("vary"), "a, b");
    assert.equal(res.headers.has("gone"), false);
  });

  await t.step("ResponseHeaders refuses what Headers refuses, at set", () => {
    const state = new ResponseHeaders();
    assert.throws(() => state.set("bad name", "x"), TypeError);
    assert.throws(() => state.set("x-a", "line\r\nx-b: injected"), TypeError);
    assert.throws(() => state.append("x-a", "nul\0"), TypeError);
    assert.throws(() => state.set("x-a", "\u2028"), TypeError);
    for (const value of ["line\r\nx-b: injected", "nul\0", "\u2028"]) {
      assert.throws(() => new Headers().set("x-a", value), TypeError);
    }
    state.set("x-a", "caf\u00e9");
    assert.equal(
      withHeaders(new Response("x"), state).headers.get("x-a"),
      "caf\u00e9",
    );
    assert.equal(state.size, 1);
  });

  await t.step("plain Headers work too", () => {
    const res = withHeaders(new Response("x"), new Headers({ a: "1" }));
    assert.equal(res.headers.get("a"), "1");
  });

  await t.step(
    "immutable headers: a copy of the response carries them",
    async () => {
      const state = new ResponseHeaders();
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
    assert.equal(withHeaders(res, new ResponseHeaders()), res);
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

Deno.test("plainPathname() is null or exactly what the URL parser gives", async (t) => {
  const plain = [
    "http://localhost/",
    "http://127.0.0.1:8000/v1/sessions/sess_01KAB3C4D5E6F7G8H9J0KMNPQR",
    "https://api.example.com/v1/sessions?x=1",
    "http://[::1]:8000/v1//sessions/#frag",
    "http://h/a-b_c~d/",
    "http://127.0.0.1:8000/v1/sessions/session:01M812HRR9EX1J9ED9TWCQHZ7Y",
    "http://h/a@b!c$d&e'f(g)h*i+j,k;l=m",
  ];
  const parsed = [
    "http://h/v1/../admin",
    "http://h/v1/./sessions",
    "http://h/v1/%2e%2e/admin",
    "http://h/v1/sess%20ion",
    "http://h/v1\\sessions",
    "http://h/a b",
    "http://h/ü",
    "http://user@h/x",
    "http://h?x=/y",
    "http://h#/y",
    "http://h",
    "ftp://h/x",
    "blob:http://h/x",
    "http://h/v1/sessions/sess.x",
  ];
  for (const url of plain) {
    await t.step(url, () => {
      assert.equal(plainPathname(url), new URL(url).pathname);
    });
  }
  for (const url of parsed) {
    await t.step(`${url} needs the parser`, () => {
      assert.equal(plainPathname(url), null);
    });
  }
  await t.step("random paths agree with the parser", () => {
    let plainSeen = 0;
    const alphabet = "aZ09-_~/.%?#\\@ :!$&'()*+,;=\"<>`{}|^[]";
    for (let i = 0; i < 5000; i++) {
      let path = "/";
      const n = Math.floor(Math.random() * 12);
      for (let j = 0; j < n; j++) {
        path += alphabet[Math.floor(Math.random() * alphabet.length)];
      }
      const url = "http://localhost:8000" + path;
      const got = plainPathname(url);
      if (got !== null) {
        plainSeen++;
        assert.equal(got, new URL(url).pathname, url);
      }
    }
    assert.ok(plainSeen > 100, `only ${plainSeen} plain paths drawn`);
  });
});
