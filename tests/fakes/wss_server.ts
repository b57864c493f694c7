/**
 * A real `wss://` server on loopback for provider fakes: TLS (test certificate) in front of
 * a plain `Deno.serve` on 127.0.0.1.
 * No ALPN is offered, so the client speaks HTTP/1.1 and an upgrade refusal reaches it as an
 * HTTP status (over h2, Deno's client reports only a stream error). `freeze()` stops relaying bytes both ways, which
 * makes a peer that never answers anything (not even a close frame). `stall()` stops
 * reading what clients send (until `resume()`), so their socket buffers fill up: an engine
 * that reads too slowly.
 */

const FIXTURES = new URL("../fixtures/tls/", import.meta.url);
export const TEST_CERT = Deno.readTextFileSync(
  new URL("localhost.crt", FIXTURES),
);
export const TEST_KEY = Deno.readTextFileSync(
  new URL("localhost.key", FIXTURES),
);

export interface WssServer {
  /** `wss://localhost:PORT` (no trailing slash). */
  origin: string;
  port: number;
  /** Stop relaying bytes in both directions (connections stay open). */
  freeze(): void;
  /** Stop reading from clients at all (their writes back up), until `resume()`. */
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

async function relay(
  from: Deno.Conn,
  to: Deno.Conn,
  frozen: () => boolean,
  gate: () => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    while (true) {
      await gate();
      const n = await from.read(buf);
      if (n === null) break;
      if (frozen()) continue;
      let off = 0;
      while (off < n) off += await to.write(buf.subarray(off, n));
    }
  } catch {
    // Either side went away; the other is closed below.
  }
  try {
    to.close();
  } catch {
    // Already closed.
  }
}

/** Starts a wss server whose requests go to `handler` (use `Deno.upgradeWebSocket`). */
export function startWssServer(
  handler: (req: Request) => Response | Promise<Response>,
): WssServer {
  const backend = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    handler,
  );
  const listener = Deno.listenTls({
    port: 0,
    hostname: "127.0.0.1",
    cert: TEST_CERT,
    key: TEST_KEY,
  });
  let frozen = false;
  let stalled: { promise: Promise<void>; resolve: () => void } | null = null;
  const gate = () => stalled?.promise ?? Promise.resolve();
  const resume = () => {
    stalled?.resolve();
    stalled = null;
  };
  const conns = new Set<Deno.Conn>();
  const tasks: Promise<void>[] = [];
  const accept = (async () => {
    try {
      for await (const tls of listener) {
        conns.add(tls);
        tasks.push((async () => {
          let up: Deno.Conn | undefined;
          try {
            await tls.handshake();
            up = await Deno.connect({
              hostname: "127.0.0.1",
              port: backend.addr.port,
            });
            conns.add(up);
            await Promise.all([
              relay(tls, up, () => frozen, gate),
              relay(up, tls, () => frozen),
            ]);
          } catch {
            try {
              tls.close();
            } catch {
              // Already closed.
            }
          }
        })());
      }
    } catch {
      // Listener closed.
    }
  })();
  const port = listener.addr.port;
  return {
    origin: `wss://localhost:${port}`,
    port,
    freeze() {
      frozen = true;
    },
    stall() {
      stalled ??= Promise.withResolvers<void>();
    },
    resume,
    async close() {
      resume();
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // Already closed.
        }
      }
      await accept;
      await Promise.all(tasks);
      await backend.shutdown();
    },
  };
}
