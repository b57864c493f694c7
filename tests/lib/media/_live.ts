/**
 * Fixtures for media-plane tests: the real app served on loopback, a fake ECEP engine on
 * real wss, sessions created through the REST API, and a recording browser socket.
 */
import assert from "node:assert/strict";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import type { FakeWs } from "../../fakes/fake_ws.ts";
import {
  authJson,
  TEST_ADMIN_KEY,
  type TestApp,
  testApp,
  type TestClock,
} from "../../_helpers.ts";

export const ENGINE_KEY = "engine-key-3f9a1c7e5b";

export interface LiveStack {
  t: TestApp;
  engine: FakeWs;
  server: Deno.HttpServer<Deno.NetAddr>;
  base: string;
  close(): Promise<void>;
}

export interface LiveStackOptions {
  /** The fake engine does not close its socket on `session.end`. */
  stubborn?: boolean;
  clock?: TestClock;
}

/** The real app on 127.0.0.1 with a fake ECEP engine; private targets allowed. */
export async function liveStack(
  env: Record<string, string> = {},
  options: LiveStackOptions = {},
): Promise<LiveStack> {
  const engine = startEcepFake({ key: ENGINE_KEY, stubborn: options.stubborn });
  const t = await testApp(
    { ALLOW_PRIVATE_NETWORK_TARGETS: "true", ...env },
    { clock: options.clock },
  );
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    t.app.handler,
  );
  return {
    t,
    engine,
    server,
    base: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      await t.close();
      await server.shutdown();
      await engine.close();
    },
  };
}

/**
 * Runs `fn` on a fresh `liveStack(setup.env, setup)` and closes the stack after it;
 * with `noFfmpegLeft`, then asserts that no ffmpeg child process outlived the stack.
 */
export async function withLiveStack(
  fn: (s: LiveStack) => Promise<void>,
  setup: LiveStackOptions & {
    env?: Record<string, string>;
    noFfmpegLeft?: boolean;
  } = {},
): Promise<void> {
  const s = await liveStack(setup.env, setup);
  try {
    await fn(s);
  } finally {
    await s.close();
  }
  if (setup.noFfmpegLeft) await noFfmpegLeft();
}

export interface Created {
  session_id: string;
  client_token: string;
  stream_metadata: { session_token: string };
}

/** Creates an `external_engine` session on the stack's fake engine. */
export async function createSession(
  s: LiveStack,
  engineKey = ENGINE_KEY,
  extra: Record<string, unknown> = {},
): Promise<Created> {
  const res = await s.t.request("/v1/sessions", {
    method: "POST",
    headers: authJson(TEST_ADMIN_KEY),
    body: JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: s.engine.url,
          auth_headers: { "x-engine-key": engineKey },
        },
      },
      ...extra,
    }),
  });
  if (res.status !== 200) {
    throw new Error(`create: ${res.status} ${await res.text()}`);
  }
  return await res.json();
}

export type Json = Record<string, unknown>;

/** A browser-side socket that records every frame. */
export class Browser {
  readonly json: Json[] = [];
  readonly binary: Uint8Array[] = [];
  closeCode: number | null = null;
  private wake = new Set<() => void>();
  readonly opened: Promise<void>;

  constructor(readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("socket error before open"));
    });
    ws.onmessage = (e) => {
      if (typeof e.data === "string") this.json.push(JSON.parse(e.data));
      else this.binary.push(new Uint8Array(e.data as ArrayBuffer));
      this.notify();
    };
    ws.onclose = (e) => {
      this.closeCode = e.code;
      this.notify();
    };
  }

  static connect(s: LiveStack, sessionId: string, token: string): Browser {
    const url = `${s.base.replace("http", "ws")}/v1/sessions/${
      encodeURIComponent(sessionId)
    }/ws?token=${encodeURIComponent(token)}`;
    return new Browser(new WebSocket(url));
  }

  private notify(): void {
    for (const w of [...this.wake]) w();
  }

  /** Resolves when `check()` is truthy (bounded so a broken test fails, not hangs). */
  until<T>(
    check: () => T | undefined | null | false,
    what: string,
    ms = 20_000,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const attempt = () => {
        const v = check();
        if (v !== undefined && v !== null && v !== false) {
          clearTimeout(timer);
          this.wake.delete(attempt);
          resolve(v);
        }
      };
      const timer = setTimeout(() => {
        this.wake.delete(attempt);
        reject(
          new Error(
            `waited too long for ${what}; got ${JSON.stringify(this.json)}`,
          ),
        );
      }, ms);
      this.wake.add(attempt);
      attempt();
    });
  }

  message(predicate: (m: Json) => boolean, what: string): Promise<Json> {
    return this.until(() => this.json.find(predicate), what);
  }

  closed(): Promise<number> {
    return this.until(() => this.closeCode ?? undefined, "close");
  }

  /** Sends a JSON message, raw text, or a binary frame. */
  send(msg: Json | Uint8Array | string): void {
    this.ws.send(
      msg instanceof Uint8Array || typeof msg === "string"
        ? msg
        : JSON.stringify(msg),
    );
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close();
  }
}

/**
 * Connects a browser to `id` and waits until the session is `active` and at least
 * `segments` binary frames (init included) have arrived.
 */
export async function connectActive(
  s: Pick<LiveStack, "base">,
  id: string,
  token: string,
  segments = 0,
): Promise<Browser> {
  const b = Browser.connect(s as LiveStack, id, token);
  await b.opened;
  await b.message(
    (m) => m.type === "session.state" && m.status === "active",
    "active",
  );
  if (segments > 0) {
    await b.until(() => b.binary.length >= segments, "media segments");
  }
  return b;
}

/** The session's status body, read with the test admin key. */
export async function statusOf(s: LiveStack, id: string): Promise<Json> {
  const res = await s.t.request(`/v1/sessions/${id}`, {
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
  });
  return await res.json();
}

/**
 * Ids of the running ffmpeg processes this test module's services started. `deno test
 * --parallel` runs the modules as workers of one process, so the other modules'
 * encoders are children of the same pid: only those this module's encoder registry
 * (`liveEncoderPids`, one per worker) started count.
 */
export async function ffmpegChildren(): Promise<number[]> {
  const mine = new Set(liveEncoderPids());
  const out: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${e.name}/stat`);
      const m = stat.match(/^\d+ \((.*)\) (\S) (\d+)/);
      if (
        m && m[1].includes("ffmpeg") && Number(m[3]) === Deno.pid &&
        m[2] !== "Z" && mine.has(Number(e.name))
      ) {
        out.push(Number(e.name));
      }
    } catch {
      // The process went away meanwhile.
    }
  }
  return out;
}

/** Asserts that no ffmpeg child is left, giving exiting ones up to 5 s to go. */
export async function noFfmpegLeft(): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if ((await ffmpegChildren()).length === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(await ffmpegChildren(), [], "ffmpeg processes left behind");
}

/** The top-level box types of an MP4 byte stream. */
export function boxTypes(bytes: Uint8Array): string[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: string[] = [];
  let off = 0;
  while (off + 8 <= bytes.length) {
    const size = view.getUint32(off);
    out.push(new TextDecoder().decode(bytes.subarray(off + 4, off + 8)));
    if (size < 8) break;
    off += size;
  }
  return out;
}

/**
 * Sends `frame` on `b` as fast as the socket takes it (never more than 2 MiB queued on
 * this side) until the server closes it or `maxBytes` went out; resolves with the bytes
 * sent.
 */
export async function flood(
  b: Browser,
  frame: Uint8Array,
  maxBytes: number,
): Promise<number> {
  let sent = 0;
  while (
    b.closeCode === null && b.ws.readyState === WebSocket.OPEN &&
    sent < maxBytes
  ) {
    if (b.ws.bufferedAmount > 2 * 1024 * 1024) {
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    b.send(frame);
    sent += frame.byteLength;
  }
  return sent;
}

/** The header by which a test asks a holding server to wait before it handles a request. */
export const HOLD_HEADER = "x-test-hold-ms";

/**
 * `handler` on 127.0.0.1, except that a request carrying `HOLD_HEADER` waits that long
 * (at most 5 s) first, as a handler behind a slow store would. `close` closes it by its
 * abort signal (a graceful shutdown would wait for an abandoned upgrade forever).
 */
export function holdingServer(
  handler: (req: Request) => Response | Promise<Response>,
): { base: string; close(): Promise<void> } {
  const abort = new AbortController();
  const server = Deno.serve(
    {
      port: 0,
      hostname: "127.0.0.1",
      signal: abort.signal,
      onListen() {},
    },
    async (req) => {
      const hold = Math.min(Number(req.headers.get(HOLD_HEADER) ?? 0), 5000);
      if (hold > 0) await new Promise((r) => setTimeout(r, hold));
      return await handler(req);
    },
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      abort.abort();
      await server.finished;
    },
  };
}

/**
 * Sends a WebSocket upgrade for `path` to `base` that the server holds for 300 ms
 * (`HOLD_HEADER`), and leaves at once: the server's upgrade then never opens (Deno).
 */
export async function abandonedUpgrade(
  base: string,
  path: string,
): Promise<void> {
  const { hostname, port } = new URL(base);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  await conn.write(
    new TextEncoder().encode(
      `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nUpgrade: websocket\r\n` +
        "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${HOLD_HEADER}: 300\r\n\r\n`,
    ),
  );
  conn.close();
}
