import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";

/** Reads from `conn` until the status line and headers arrived, a close, or `ms`. */
async function readHead(conn: Deno.Conn, ms: number): Promise<string> {
  const buf = new Uint8Array(16 * 1024);
  let out = "";
  const deadline = Date.now() + ms;
  while (!out.includes("\r\n\r\n") && Date.now() < deadline) {
    const n = await Promise.race([
      conn.read(buf).catch(() => null),
      new Promise<"timeout">((r) =>
        setTimeout(() => r("timeout"), deadline - Date.now())
      ),
    ]);
    if (n === "timeout" || n === null) break;
    out += new TextDecoder().decode(buf.subarray(0, n));
  }
  return out;
}

Deno.test("a console form trickled over a real socket is cut off at REQUEST_BODY_TIMEOUT_MS with a 408 page", async () => {
  const t = await testApp({ REQUEST_BODY_TIMEOUT_MS: "400" });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    t.app.handler,
  );
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: server.addr.port,
  });
  const enc = new TextEncoder();
  let stop = false;
  try {
    await conn.write(enc.encode(
      `POST /admin/login HTTP/1.1\r\nhost: 127.0.0.1:${server.addr.port}\r\n` +
        `origin: ${origin}\r\n` +
        "content-type: application/x-www-form-urlencoded\r\n" +
        "content-length: 1000\r\n\r\n",
    ));
    const trickle = (async () => {
      while (!stop) {
        await conn.write(enc.encode("a")).catch(() => {
          stop = true;
        });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const head = await readHead(conn, 5000);
    stop = true;
    await trickle;
    assert.match(head, /^HTTP\/1\.1 408 /, head || "(no answer)");
  } finally {
    stop = true;
    conn.close();
    await server.shutdown();
    await t.close();
  }
});

Deno.test("a console form over 64 KiB answers 413", async () => {
  const t = await testApp();
  const res = await t.request("/admin/login", {
    method: "POST",
    headers: {
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "key=" + "a".repeat(70 * 1024),
  });
  assert.equal(res.status, 413);
  assert.match(await res.text(), /Form too large/);
  await t.close();
});
