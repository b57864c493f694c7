import assert from "node:assert/strict";
import { moveSession } from "../lib/sessions.ts";
import { TEST_ADMIN_KEY, testApp } from "./_helpers.ts";

Deno.test("app answers an unknown /v1/ path with 404 AVTR_NOT_FOUND and echoes X-Request-Id", async () => {
  const t = await testApp();
  try {
    const res = await t.request("/v1/nope", {
      headers: { "x-request-id": "req_abc-1" },
    });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("x-request-id"), "req_abc-1");
    const body = await res.json();
    assert.equal(body.code, "AVTR_NOT_FOUND");
    assert.equal(body.request_id, "req_abc-1");
    assert.match(body.doc_url, /^https:\/\/.+\/errors\/AVTR_NOT_FOUND$/);
    assert.equal("retry_after" in body, false);
  } finally {
    await t.close();
  }
});

Deno.test("every response carries the baseline headers, errors included", async (t) => {
  const app = await testApp();
  try {
    const cases: [string, string, RequestInit, number][] = [
      ["200", "/healthz", {}, 200],
      ["404 on an unmatched /v1 path", "/v1/nope", {}, 404],
      ["401 without a credential", "/v1/sessions/session:x", {}, 401],
      ["404 on an unknown session", "/v1/sessions/session:x", {
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      }, 404],
      ["405 on a wrong method", "/v1/sessions", { method: "PUT" }, 405],
    ];
    for (const [name, path, init, status] of cases) {
      await t.step(name, async () => {
        const res = await app.request(path, init);
        await res.body?.cancel();
        assert.equal(res.status, status);
        assert.equal(res.headers.get("x-content-type-options"), "nosniff");
        assert.equal(res.headers.get("referrer-policy"), "no-referrer");
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("app replaces an X-Request-Id that breaks the rule with a UUID", async (t) => {
  const app = await testApp();
  try {
    for (const bad of ["has space", "x".repeat(129), "semi;colon"]) {
      await t.step(JSON.stringify(bad.slice(0, 20)), async () => {
        const res = await app.request("/v1/nope", {
          headers: { "x-request-id": bad },
        });
        const id = res.headers.get("x-request-id")!;
        assert.match(
          id,
          /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        );
        assert.equal((await res.json()).request_id, id);
      });
    }
  } finally {
    await app.close();
  }
});

Deno.test("healthz answers ok and readyz reports ready", async () => {
  const t = await testApp();
  try {
    const h = await t.request("/healthz");
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: "ok" });
    const r = await t.request("/readyz");
    assert.equal(r.status, 200);
    assert.equal((await r.json()).status, "ready");
  } finally {
    await t.close();
  }
});

Deno.test("readyz reports not ready when TOKEN_SECRET is shorter than 32 bytes", async () => {
  const t = await testApp({ TOKEN_SECRET: "short" });
  try {
    const r = await t.request("/readyz");
    assert.equal(r.status, 503);
    const body = await r.json();
    assert.equal(body.status, "not_ready");
    assert.equal(body.checks.token_secret, "failing");
  } finally {
    await t.close();
  }
});

Deno.test("the service refuses to start with an ADMIN_API_KEY shorter than 32 characters", async (t) => {
  await t.step(
    "main.ts exits with status 2, naming the variable, not the key",
    async () => {
      const key = "short-admin-key-31-chars-long!!";
      assert.equal(key.length, 31);
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", new URL("../main.ts", import.meta.url).pathname],
        env: { ADMIN_API_KEY: key, KV_PATH: ":memory:", PORT: "0" },
        stdout: "piped",
        stderr: "piped",
        // A start that is not refused would keep serving: end it rather than hang.
        signal: AbortSignal.timeout(30_000),
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      const stdout = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 2, `started anyway: ${stdout}${stderr}`);
      assert.match(stderr, /ADMIN_API_KEY must be at least 32 characters/);
      assert.equal((stdout + stderr).includes(key), false);
    },
  );
  await t.step("32 characters or more, or unset: the app starts", async () => {
    for (const key of ["k".repeat(32), undefined]) {
      const app = await testApp({ ADMIN_API_KEY: key });
      try {
        const res = await app.request("/healthz");
        await res.body?.cancel();
        assert.equal(res.status, 200);
      } finally {
        await app.close();
      }
    }
  });
});

/** Sends `head` on a fresh loopback connection; returns the response head, then closes. */
async function rawHead(port: number, head: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(head));
    const buf = new Uint8Array(16 * 1024);
    let text = "";
    while (!text.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return text.slice(0, text.indexOf("\r\n\r\n"));
  } finally {
    conn.close();
  }
}

Deno.test("a WebSocket upgrade (101) through the real server carries X-Request-Id and X-RateLimit-*", async () => {
  const app = await testApp();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    app.app.handler,
  );
  try {
    const created = await app.request("/v1/sessions", {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: "wss://engine.example.com/v1",
            auth_headers: { authorization: "Bearer engine-secret" },
          },
        },
      }),
    });
    assert.equal(created.status, 200);
    const { session_id, client_token } = await created.json();
    // Failed first: the socket is then answered and closed without any engine.
    const moved = await moveSession(app.app.deps, session_id, {
      from: ["created"],
      to: "failed",
      reason: "start_failed",
    });
    assert.equal(moved.ok, true);
    const head = await rawHead(
      server.addr.port,
      [
        `GET /v1/sessions/${session_id}/ws?token=${
          encodeURIComponent(client_token)
        } HTTP/1.1`,
        `Host: 127.0.0.1:${server.addr.port}`,
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "X-Request-Id: upgrade-1",
        "",
        "",
      ].join("\r\n"),
    );
    const [status, ...lines] = head.split("\r\n");
    assert.match(status, /^HTTP\/1\.1 101 /);
    const headers = new Map(lines.map((l) => {
      const i = l.indexOf(":");
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
    }));
    assert.equal(headers.get("upgrade")?.toLowerCase(), "websocket");
    assert.equal(headers.get("x-request-id"), "upgrade-1");
    assert.equal(headers.get("x-ratelimit-limit"), "600");
    assert.match(headers.get("x-ratelimit-remaining") ?? "", /^\d+$/);
    assert.match(headers.get("x-ratelimit-reset") ?? "", /^\d+$/);
  } finally {
    await app.close();
    await server.shutdown();
  }
});
