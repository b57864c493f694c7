import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { AppDeps } from "../../../lib/deps.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { AppMetrics } from "../../../lib/metrics/registry.ts";
import { SOCKET_OPEN_TIMEOUT_MS } from "../../../lib/media/contain.ts";
import {
  INBOUND_BURST_BYTES,
  MIC_AUDIO_BURST_S,
} from "../../../lib/media/gate.ts";
import {
  CLOSE_FLOODING,
  MAX_FRAME_BYTES,
} from "../../../lib/media/protocol.ts";
import {
  RELAY_MAX_PENDING_BYTES,
  relaySocket,
} from "../../../lib/media/relay.ts";
import { abandonedUpgrade, Browser, flood, holdingServer } from "./_live.ts";
import { poll } from "../render/_helpers.ts";

/**
 * A holder stand-in that answers its upgrade after `delayMs` and records frame sizes,
 * and how many of its sockets opened and closed.
 */
function slowHolder(delayMs: number) {
  const sizes: number[] = [];
  const sockets = { opened: 0, closed: 0 };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      await new Promise((r) => setTimeout(r, delayMs));
      const { socket, response } = Deno.upgradeWebSocket(req);
      socket.binaryType = "arraybuffer";
      socket.onopen = () => sockets.opened++;
      socket.onclose = () => sockets.closed++;
      socket.onmessage = (e) =>
        sizes.push(
          typeof e.data === "string"
            ? e.data.length
            : (e.data as ArrayBuffer).byteLength,
        );
      return response;
    },
  );
  return {
    sizes,
    sockets,
    server,
    url: `ws://127.0.0.1:${server.addr.port}/`,
  };
}

/** What a front instance's browser-facing sockets handed to the relay. */
interface Arrived {
  bytes: number;
  closeCode: number | null;
}

/**
 * The relay's deps for a front instance (only what `relaySocket` reads), on the clock
 * `now`.
 */
function frontDeps(now: () => number = Date.now): AppDeps {
  return {
    log: memoryLogger(),
    onClose: [],
    now,
    config: { nodeSecret: new TextEncoder().encode("n".repeat(32)) },
    metrics: new AppMetrics(),
  } as unknown as AppDeps;
}

/**
 * A front instance that relays every socket to `upstream`, on the clock `now`; `arrived`
 * counts the bytes of every frame its sockets handed to the relay (closing or not).
 */
function front(upstream: string, now: () => number = Date.now) {
  const deps = frontDeps(now);
  const arrived: Arrived = { bytes: 0, closeCode: null };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (req) => {
      const { socket, response } = Deno.upgradeWebSocket(req);
      // Registered before the relay's handler, so it sees each frame first.
      socket.addEventListener("message", (e) => {
        arrived.bytes += typeof e.data === "string"
          ? e.data.length
          : (e.data as ArrayBuffer).byteLength;
      });
      socket.addEventListener("close", (e) => arrived.closeCode = e.code);
      relaySocket(deps, socket, upstream, "session:relay", "holder");
      return response;
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  return { deps, server, base, arrived };
}

async function withRelay(
  delayMs: number,
  fn: (
    b: Browser,
    holder: ReturnType<typeof slowHolder>,
    arrived: Arrived,
    deps: AppDeps,
  ) => Promise<void>,
  now?: () => number,
): Promise<void> {
  const holder = slowHolder(delayMs);
  const f = front(holder.url, now);
  const b = new Browser(new WebSocket(`${f.base.replace("http", "ws")}/`));
  try {
    await b.opened;
    await fn(b, holder, f.arrived, f.deps);
  } finally {
    b.close();
    for (const hook of f.deps.onClose) await hook();
    await f.server.shutdown();
    await holder.server.shutdown();
  }
}

Deno.test("relay holds at most RELAY_MAX_PENDING_BYTES while the holder connects", async () => {
  await withRelay(400, async (b, holder, _arrived, deps) => {
    for (let i = 0; i < 10; i++) b.send(new Uint8Array(60 * 1024));
    await new Promise((r) => setTimeout(r, 700));
    b.send(new Uint8Array(100));
    await poll(() => holder.sizes.includes(100));
    const held = holder.sizes.filter((n) => n === 60 * 1024);
    assert.ok(
      held.length * 60 * 1024 <= RELAY_MAX_PENDING_BYTES,
      `${held.length} frames held`,
    );
    assert.ok(held.length >= 1);
    // What reached the holder, held or not, is counted as relayed; nothing dropped.
    const sent = holder.sizes.reduce((a, n) => a + n, 0);
    assert.match(
      (await deps.metrics.expose()).body,
      new RegExp(
        `avatar_relay_bytes_total\\{direction="to_holder"\\} ${sent}\n`,
      ),
    );
  });
});

Deno.test("relay closes the holder's socket when the browser closes its own (no code: 1005)", async () => {
  await withRelay(0, async (b, holder) => {
    b.send(new Uint8Array(10));
    await poll(() => holder.sizes.length === 1);
    b.ws.close();
    await poll(() => holder.sockets.closed === 1);
  });
});

Deno.test("relay refuses frames over 64 KiB before passing them on; the third closes 1009", async () => {
  await withRelay(0, async (b, holder) => {
    b.send(new Uint8Array(10));
    await poll(() => holder.sizes.length === 1);
    b.send(new Uint8Array(64 * 1024 + 1));
    b.send("x".repeat(70_000));
    await b.until(
      () =>
        b.json.filter((m) => m.code === "invalid_message").length === 2 ||
        undefined,
      "two invalid_message",
    );
    b.send(new Uint8Array(200_000));
    assert.equal(await b.closed(), 1009);
    assert.deepEqual(holder.sizes, [10], "nothing oversize went through");
    // The holder's socket closes too (a client socket may not send 1009 itself).
    await poll(() => holder.sockets.closed === 1);
  });
});

Deno.test("relay applies the socket's rate gates: a flood of 60-KiB frames reaches the holder only as fast as the holder's own gate would take it", async () => {
  await withRelay(0, async (b, holder) => {
    // 7.2 MiB: under the byte bound, which closes a longer flood (tested below).
    for (let i = 0; i < 60; i++) {
      b.send(new Uint8Array(60 * 1024));
      b.send("x".repeat(60 * 1024));
    }
    b.send(new Uint8Array(2));
    await new Promise((r) => setTimeout(r, 500));
    const big = holder.sizes.filter((n) => n === 60 * 1024);
    // Text: the burst (60); binary: the microphone's 4-s burst at 24 kHz (about 3
    // frames of 1.28 s) and its refill.
    assert.ok(big.length <= 60 + 10, `${big.length} frames`);
    const total = holder.sizes.reduce((a, n) => a + n, 0);
    assert.ok(total < 5 * 1024 * 1024, `${total} bytes passed on`);
    // The browser heard why (rate-limited invalid_message), and is still open.
    assert.ok(b.json.some((m) => m.code === "invalid_message"));
    assert.equal(b.closeCode, null);
  });
});

// These run on a clock that stands still: the byte bound never refills, so it is exact.
const still = () => 0;
const FRAME = new Uint8Array(MAX_FRAME_BYTES);

Deno.test("relay closes a socket with 1008 at the first frame past INBOUND_BURST_BYTES, before passing it on", async () => {
  await withRelay(0, async (b, holder, arrived) => {
    await flood(b, FRAME, INBOUND_BURST_BYTES + MAX_FRAME_BYTES);
    assert.equal(await b.closed(), CLOSE_FLOODING);
    assert.equal(arrived.bytes, INBOUND_BURST_BYTES + MAX_FRAME_BYTES);
    await poll(() => holder.sockets.closed === 1);
    // Only the microphone's burst went on to the holder (24 kHz: 4 s of audio).
    const passed = holder.sizes.reduce((a, n) => a + n, 0);
    assert.ok(passed <= MIC_AUDIO_BURST_S * 24_000 * 2 + MAX_FRAME_BYTES);
  }, still);
});

Deno.test("relay stops reading a 64-MiB flood of 64-KiB frames at INBOUND_BURST_BYTES", async () => {
  await withRelay(0, async (b, _holder, arrived) => {
    const max = 64 * 1024 * 1024;
    const sent = await flood(b, FRAME, max);
    await b.closed();
    assert.ok(
      arrived.bytes <= INBOUND_BURST_BYTES + MAX_FRAME_BYTES,
      `the relay took ${arrived.bytes} bytes before it closed the socket`,
    );
    assert.notEqual(arrived.closeCode, null);
    assert.ok(sent < max, "the socket closed under the browser");
  }, still);
});

Deno.test("relay keeps a socket whose burst stays under the byte bound (a reconnect's catch-up)", async () => {
  await withRelay(0, async (b, holder, arrived) => {
    const config = JSON.stringify({ type: "audio.config", sample_rate: 48000 });
    b.send(config);
    // 4 MiB at once: far more than the browser client ever queues (256 KiB).
    const sent = await flood(b, new Uint8Array(9600), 4 * 1024 * 1024);
    b.send(new Uint8Array(2));
    await poll(() => holder.sizes.includes(2));
    assert.equal(arrived.bytes, config.length + sent + 2);
    assert.equal(b.closeCode, null);
    assert.equal(arrived.closeCode, null);
  }, still);
});

/** A holder that completes the WebSocket handshake and then never reads. */
function deafHolder() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  void (async () => {
    for await (const c of listener) {
      conns.push(c);
      const buf = new Uint8Array(8192);
      const n = await c.read(buf);
      const req = new TextDecoder().decode(buf.subarray(0, n ?? 0));
      const key = /sec-websocket-key: *(\S+)/i.exec(req)?.[1] ?? "";
      const accept = createHash("sha1")
        .update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
      await c.write(new TextEncoder().encode(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" +
          `Connection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      ));
    }
  })().catch(() => {});
  return {
    url: `ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`,
    close() {
      for (const c of conns) c.close();
      listener.close();
    },
  };
}

Deno.test("relay closes 1013 when the holder stops reading and its queue passes the bound (the browser cannot grow the relay's memory)", async () => {
  const holder = deafHolder();
  const f = front(holder.url);
  const b = new Browser(new WebSocket(`${f.base.replace("http", "ws")}/`));
  try {
    await b.opened;
    // The largest frames the gate passes on, as fast as it passes them.
    const answer = JSON.stringify({
      type: "webrtc.answer",
      sdp: "x".repeat(32_000),
    });
    b.send(JSON.stringify({ type: "audio.config", sample_rate: 48000 }));
    const log = (f.deps.log as unknown as { lines: string[] }).lines;
    const gaveUp = () => log.some((l) => l.includes("relay holder too slow"));
    // One frame at a time, each handed to the relay before the next is sent: a
    // browser still sending when the close leaves may see the connection reset
    // instead of the close frame (Deno drops a closing socket that keeps receiving),
    // so nothing is sent once the relay gave up on the holder.
    const deadline = Date.now() + 30_000;
    let sent = 0;
    const send = async (frame: string | Uint8Array) => {
      b.send(frame);
      sent += typeof frame === "string" ? frame.length : frame.byteLength;
      for (let i = 0; i < 10_000; i++) {
        if (f.arrived.bytes >= sent || b.closeCode !== null) return;
        await new Promise((r) => setTimeout(r, 2));
      }
      throw new Error(`frames never reached the relay (${f.arrived.bytes})`);
    };
    while (b.closeCode === null && !gaveUp() && Date.now() < deadline) {
      // 20 answers and 2 s of 48-kHz audio a second: what the gate passes on, and
      // under the byte bound.
      await send(answer);
      if (gaveUp()) break;
      await send(new Uint8Array(9600));
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(gaveUp(), "the relay never gave up on the deaf holder");
    await b.until(() => b.closeCode !== null, "the browser's socket to close");
    assert.equal(b.closeCode, 1013);
  } finally {
    b.close();
    for (const hook of f.deps.onClose) await hook();
    await f.server.shutdown();
    holder.close();
  }
});

Deno.test("relay closes its upstream when the browser's socket never opens (its client left mid-handshake)", async () => {
  const holder = slowHolder(0);
  const deps = frontDeps();
  const front = holdingServer((req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    relaySocket(deps, socket, holder.url, "session:relay", "holder");
    return response;
  });
  try {
    await abandonedUpgrade(front.base, "/");
    // The upstream opened (a socket of the session on the holder); it must not stay.
    await poll(() => holder.sockets.opened === 1, 5_000);
    await poll(() => holder.sockets.closed === 1, 4 * SOCKET_OPEN_TIMEOUT_MS);
  } finally {
    for (const hook of deps.onClose) await hook();
    await front.close();
    await holder.server.shutdown();
  }
});
