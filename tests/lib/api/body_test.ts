import assert from "node:assert/strict";
import { readJsonObject } from "../../../lib/api/body.ts";
import { ApiError } from "../../../lib/errors.ts";
import { TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";

/** Reads from `conn` until a whole JSON answer, a close, or `ms`; returns what arrived. */
async function readAnswer(conn: Deno.Conn, ms: number): Promise<string> {
  const buf = new Uint8Array(16 * 1024);
  let out = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((r) => {
    timer = setTimeout(() => r("timeout"), ms);
  });
  try {
    while (true) {
      const n = await Promise.race([conn.read(buf).catch(() => null), timeout]);
      if (n === "timeout") return out;
      if (n === null) return out + "\n[closed]";
      out += new TextDecoder().decode(buf.subarray(0, n));
      if (out.includes("\r\n\r\n") && out.endsWith("}")) return out;
    }
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a body trickled over a real socket is cut off at REQUEST_BODY_TIMEOUT_MS: 408 AVTR_REQUEST_TIMEOUT, and the request ends", async (t) => {
  const app = await testApp({ REQUEST_BODY_TIMEOUT_MS: "400" });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    app.app.handler,
  );
  const port = server.addr.port;
  const routes: [string, string][] = [
    ["/v1/sessions", "create"],
    ["/v1/api-keys", "api-key create"],
  ];
  try {
    for (const [path, name] of routes) {
      for (const framing of ["content-length", "chunked"]) {
        await t.step(`${name}, ${framing}`, async () => {
          const conn = await Deno.connect({ hostname: "127.0.0.1", port });
          const enc = new TextEncoder();
          const started = Date.now();
          const before = app.log.lines.length;
          try {
            await conn.write(enc.encode(
              `POST ${path} HTTP/1.1\r\nhost: x\r\n` +
                `authorization: Bearer ${TEST_ADMIN_KEY}\r\n` +
                "content-type: application/json\r\n" +
                (framing === "chunked"
                  ? "transfer-encoding: chunked\r\n\r\n"
                  : "content-length: 1000\r\n\r\n"),
            ));
            // One byte every 100 ms: each read arrives well within any per-read limit.
            let stop = false;
            const trickle = (async () => {
              while (!stop) {
                await conn.write(
                  enc.encode(framing === "chunked" ? "1\r\n{\r\n" : " "),
                ).catch(() => {
                  stop = true;
                });
                await new Promise((r) => setTimeout(r, 100));
              }
            })();
            const answer = await readAnswer(conn, 5000);
            stop = true;
            await trickle;
            const elapsed = Date.now() - started;
            assert.match(answer, /^HTTP\/1\.1 408 /, answer || "(no answer)");
            assert.match(answer, /"code":"AVTR_REQUEST_TIMEOUT"/);
            assert.match(answer, /connection: close/i);
            assert.match(answer, /x-ratelimit-limit: /i);
            // The request is over (logged, nothing held); Deno's server may keep the
            // connection itself open until the body ends (docs/operations.md, Security).
            const logged = app.log.lines.slice(before).map((l) => JSON.parse(l))
              .filter((r) => r.msg === "request" && r.status === 408);
            assert.equal(logged.length, 1);
            assert.ok(elapsed < 3000, `answered after ${elapsed} ms`);
          } finally {
            try {
              conn.close();
            } catch { /* closed by the server */ }
          }
        });
      }
    }
    await t.step("a prompt body is unaffected", async () => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/api-keys`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_ADMIN_KEY}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ tenant_id: "t1", scopes: ["sessions:read"] }),
      });
      assert.equal(res.status, 201);
      await res.body?.cancel();
    });
  } finally {
    await server.shutdown();
    await app.close();
  }
});

Deno.test("readJsonObject(): a body stream that errors is a 400, not a 500", async () => {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode("{"));
      c.error(new Error("connection reset"));
    },
  });
  const req = new Request("http://x/", {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
  });
  await assert.rejects(
    readJsonObject(req, 1000),
    (e) => e instanceof ApiError && e.code === "AVTR_REQUEST_INVALID",
  );
});

Deno.test("readJsonObject(): the deadline covers the whole body, and cancels the stream", async () => {
  let cancelled = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      timer = setInterval(() => c.enqueue(new Uint8Array([0x20])), 20);
    },
    cancel() {
      cancelled = true;
      clearInterval(timer);
    },
  });
  const req = new Request("http://x/", {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
  });
  const started = Date.now();
  await assert.rejects(
    readJsonObject(req, 200),
    (e) =>
      e instanceof ApiError && e.code === "AVTR_REQUEST_TIMEOUT" &&
      e.status === 408 && e.headers.connection === "close",
  );
  assert.ok(Date.now() - started < 1000);
  assert.equal(cancelled, true);
});
