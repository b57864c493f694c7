/**
 * Photo uploads read at once (lib/console/upload_slots.ts): one per tenant and
 * `MAX_UPLOAD_READS` per process, refused 503 before a byte is read, so stalled uploads
 * cannot fill the process's memory. Real sockets: a stalled upload is a real connection
 * that sent its head and part of its body.
 */
import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import { MAX_UPLOAD_READS } from "../../../lib/console/upload_slots.ts";
import { type Console, mintViaApi, signIn } from "./_console.ts";

const BOUNDARY = "slotsBoundary";

/** Opens an upload and sends its head and 1 MiB of body, then stops sending. */
async function stalledUpload(port: number, c: Console): Promise<Deno.TcpConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const head = [
    "POST /admin/avatars HTTP/1.1",
    "host: localhost",
    `cookie: ${c.cookie}`,
    "origin: http://localhost",
    `content-type: multipart/form-data; boundary=${BOUNDARY}`,
    `content-length: ${8 * 1024 * 1024}`,
    "",
    "",
  ].join("\r\n");
  await conn.write(new TextEncoder().encode(head));
  const body = new Uint8Array(1 << 20).fill(0x41);
  for (let off = 0; off < body.length;) {
    off += await conn.write(body.subarray(off));
  }
  return conn;
}

/** A whole upload without a photo: 400 once read (the page says why), 503 when refused. */
async function emptyUpload(port: number, c: Console): Promise<Response> {
  const form = new FormData();
  form.set("_csrf", c.csrf);
  form.set("name", "x");
  const res = await fetch(`http://127.0.0.1:${port}/admin/avatars`, {
    method: "POST",
    headers: { cookie: c.cookie, origin: `http://127.0.0.1:${port}` },
    body: form,
  });
  await res.body?.cancel();
  return res;
}

Deno.test("photo uploads are read one per tenant and MAX_UPLOAD_READS per process; the rest get 503 unread", async () => {
  const app = await testApp();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    app.app.handler,
  );
  const port = server.addr.port;
  const open: Deno.TcpConn[] = [];
  try {
    const tenants: Console[] = [];
    for (let i = 0; i <= MAX_UPLOAD_READS; i++) {
      const key = await mintViaApi(app, {
        tenant_id: `t${i}`,
        scopes: ["keys:admin"],
      });
      tenants.push(await signIn(app, key.api_key));
    }
    const [first, ...others] = tenants;
    open.push(await stalledUpload(port, first));
    await new Promise((r) => setTimeout(r, 100));
    const again = await emptyUpload(port, first);
    assert.equal(
      again.status,
      503,
      "a tenant's second upload while one is read",
    );
    assert.equal(again.headers.get("retry-after"), "5");
    assert.equal(
      (await emptyUpload(port, others[0])).status,
      400,
      "another tenant's is read",
    );
    for (const c of others.slice(0, MAX_UPLOAD_READS - 1)) {
      open.push(await stalledUpload(port, c));
    }
    await new Promise((r) => setTimeout(r, 100));
    const last = others[MAX_UPLOAD_READS - 1];
    assert.equal(
      (await emptyUpload(port, last)).status,
      503,
      "the process is at its bound",
    );
    // A stalled upload that goes away frees its slot.
    open.shift()!.close();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await emptyUpload(port, last)).status, 400);
  } finally {
    for (const c of open) c.close();
    await server.shutdown();
    await app.close();
  }
});
