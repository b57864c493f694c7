import assert from "node:assert/strict";
import {
  authJson,
  engineCreateBody,
  TEST_ADMIN_KEY,
  testApp,
} from "../../../../_helpers.ts";

Deno.test("media socket: a valid token with a broken upgrade is a 400 AVTR_REQUEST_INVALID, not a 500", async (t) => {
  const app = await testApp();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    app.app.handler,
  );
  try {
    const created = await app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify(engineCreateBody()),
    });
    assert.equal(created.status, 200);
    const s = await created.json();
    const target = `/v1/sessions/${s.session_id}/ws?token=${
      encodeURIComponent(s.client_token)
    }`;
    const broken: [string, string][] = [
      ["no Sec-WebSocket-Key", "sec-websocket-version: 13\r\n"],
      ["no version, no key", ""],
    ];
    for (const [name, extra] of broken) {
      await t.step(name, async () => {
        const conn = await Deno.connect({
          hostname: "127.0.0.1",
          port: server.addr.port,
        });
        try {
          await conn.write(new TextEncoder().encode(
            `GET ${target} HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\n` +
              `connection: upgrade, close\r\n${extra}\r\n`,
          ));
          let text = "";
          const buf = new Uint8Array(8192);
          while (!text.endsWith("}")) {
            const n = await conn.read(buf);
            if (n === null) break;
            text += new TextDecoder().decode(buf.subarray(0, n));
          }
          assert.match(text, /^HTTP\/1\.1 400 /, text);
          assert.match(text, /"code":"AVTR_REQUEST_INVALID"/);
        } finally {
          conn.close();
        }
      });
    }
  } finally {
    await server.shutdown();
    await app.close();
  }
});
