/**
 * The media benchmark's fixtures (`bench/media.ts`): the real service as a subprocess on
 * a temporary KV file, its admin REST calls, and the example engine instrumented to
 * report when each response's first agent-audio frame is sent.
 */
import { ensureIslandsBuilt } from "../lib/console/bundle.ts";
import { sleep } from "./_media_lib.ts";
import { METRICS_TOKEN } from "./_kv_sizing.ts";

const ROOT = new URL("..", import.meta.url).pathname;
/** The test TLS fixtures (CA, localhost certificate and key). */
export const TLS = `${ROOT}tests/fixtures/tls/`;
const ADMIN_KEY = "bench-admin-key-0123456789abcdefghijklmnopqrstuvwxyz";
const TOKEN_SECRET = "bench-token-secret-0123456789abcdefghijklmnopqrstuvwxyz";
/** The bearer token the engine accepts and sessions send it. */
export const ENGINE_TOKEN = "bench-engine-token-0123456789";

// ---------------------------------------------------------------------------
// The engine, instrumented: the time each response's first agent-audio frame is sent.

type Upgrade = typeof Deno.upgradeWebSocket;

/**
 * Wraps `Deno.upgradeWebSocket` so `onFirstAudio` hears each response's first binary
 * frame; returns the function that restores it.
 */
export function instrumentEngine(
  onFirstAudio: (sessionId: string, at: number) => void,
): () => void {
  const deno = Deno as unknown as { upgradeWebSocket: Upgrade };
  const orig = deno.upgradeWebSocket;
  deno.upgradeWebSocket = (req, options) => {
    const r = orig(req, options);
    let sessionId = "";
    let armed = false;
    r.socket.addEventListener("message", (e) => {
      if (typeof e.data !== "string") return;
      try {
        const m = JSON.parse(e.data);
        if (m.type === "session.start") sessionId = String(m.session_id);
      } catch { /* the engine answers it */ }
    });
    const send = r.socket.send.bind(r.socket);
    r.socket.send = (data) => {
      if (typeof data === "string") {
        if (data.includes('"response.start"')) armed = true;
      } else if (armed) {
        armed = false;
        onFirstAudio(sessionId, performance.now());
      }
      send(data);
    };
    return r;
  };
  return () => (deno.upgradeWebSocket = orig);
}

// ---------------------------------------------------------------------------
// The service subprocess

export interface Service {
  base: string;
  child: Deno.ChildProcess;
  problems: string[];
  stop(): Promise<void>;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
/**
 * Starts the service on a free port and waits until `/healthz` answers; `extraEnv` adds
 * to (or overrides) the bench's environment.
 */
export async function startService(
  kvPath: string,
  extraEnv: Record<string, string> = {},
): Promise<Service> {
  // The service refuses to start without its console bundle (a fresh clone has none).
  await ensureIslandsBuilt();
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: ROOT,
    env: {
      PORT: String(port),
      KV_PATH: kvPath,
      ADMIN_API_KEY: ADMIN_KEY,
      TOKEN_SECRET,
      RATE_LIMIT_PER_MINUTE: "100000000",
      MAX_CONCURRENT_SESSIONS: "100000",
      RENDER_MAX_SESSIONS: "1000",
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      END_CLEANUP_TIMEOUT_MS: "5000",
      DENO_CERT: `${TLS}ca.crt`,
      METRICS_TOKEN,
      ...extraEnv,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Keep warnings and errors of the service's log (JSON lines) as evidence.
  const problems: string[] = [];
  let last = "";
  let exited = false;
  child.status.then(() => (exited = true));
  const drain = async (s: ReadableStream<Uint8Array>) => {
    let rest = "";
    const dec = new TextDecoder();
    for await (const bytes of s) {
      const lines = (rest + dec.decode(bytes, { stream: true })).split("\n");
      rest = lines.pop() ?? "";
      for (const l of lines) {
        if (l.trim()) last = l.slice(0, 400);
        if (/"level":"(warn|error)"/.test(l) && problems.length < 50) {
          problems.push(l.slice(0, 400));
        }
      }
    }
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${base}/healthz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (exited || Date.now() > deadline) {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await drained.catch(() => {});
      throw new Error(`the service did not start: ${last}`);
    }
    await sleep(100);
  }
  let stopping: Promise<void> | null = null;
  return {
    base,
    child,
    problems,
    stop() {
      stopping ??= (async () => {
        try {
          child.kill("SIGTERM");
        } catch { /* gone */ }
        const t = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* gone */ }
        }, 10_000);
        await child.status;
        clearTimeout(t);
        await drained.catch(() => {});
      })();
      return stopping;
    },
  };
}

/** An admin-authenticated JSON POST; the body is `{}` when the answer is not JSON. */
export async function post(base: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method: "POST",
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => ({})) };
}
