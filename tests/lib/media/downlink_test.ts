import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { LiveSession } from "../../../lib/media/live.ts";
import {
  CLOSE_TOO_SLOW,
  MAX_SOCKET_JSON_BUFFERED_BYTES,
} from "../../../lib/media/downlink.ts";

/**
 * A real server-side socket on loopback whose client completed the handshake and then
 * never reads again (a hostile or stuck browser): what the server sends stays queued.
 */
async function unreadSocket(): Promise<
  { ws: WebSocket; close(): Promise<void> }
> {
  let server!: Deno.HttpServer<Deno.NetAddr>;
  const upgraded = new Promise<WebSocket>((resolve) => {
    server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      (req) => {
        const { socket, response } = Deno.upgradeWebSocket(req);
        resolve(socket);
        return response;
      },
    );
  });
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: server.addr.port,
  });
  await conn.write(
    new TextEncoder().encode(
      "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n" +
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
        "Sec-WebSocket-Version: 13\r\n\r\n",
    ),
  );
  const head = new Uint8Array(1024);
  await conn.read(head); // the 101, then nothing is read any more
  const ws = await upgraded;
  if (ws.readyState !== WebSocket.OPEN) {
    await new Promise((r) => ws.addEventListener("open", r, { once: true }));
  }
  return {
    ws,
    async close() {
      conn.close();
      await server.shutdown();
    },
  };
}

Deno.test("an engine's transcript flood to a browser that does not read closes its socket (1013) instead of queueing without bound", async () => {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:" },
    log: memoryLogger(),
  });
  const sock = await unreadSocket();
  try {
    const live = new LiveSession(deps, "session:test");
    live.attach(sock.ws, "active");
    const events = live.engineEvents(() => {});
    const text = "x".repeat(16_000);
    // 48 MiB of transcripts, in steps so the socket gets to try to flush.
    for (let step = 0; step < 60; step++) {
      for (let i = 0; i < 50; i++) {
        events.onTranscript({ role: "agent", text, final: true });
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(
      sock.ws.bufferedAmount <= MAX_SOCKET_JSON_BUFFERED_BYTES + 64 * 1024,
      `queued ${sock.ws.bufferedAmount} bytes for a browser that does not read`,
    );
    assert.notEqual(sock.ws.readyState, WebSocket.OPEN, "the socket is closed");
    assert.equal(CLOSE_TOO_SLOW, 1013);
  } finally {
    await sock.close();
    await closeDeps(deps);
  }
});
