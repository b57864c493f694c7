/**
 * What the fuzzers attack: the real service run as a child process (so a crash is seen
 * as a process death, not a failed test), API keys for throwaway tenants, and a
 * bystander — another tenant's live session whose media must keep flowing while the
 * fuzzer attacks.
 */
import { startEcepFake } from "../tests/fakes/ecep_engine_fake.ts";
import type { FakeWs } from "../tests/fakes/fake_ws.ts";
import { startInstance } from "../tests/lib/media/_instance.ts";

export const FUZZ_ADMIN_KEY = "fuzz-admin-key-0123456789abcdefghijklmnop";
export const FUZZ_TOKEN_SECRET = "fuzz-token-secret-0123456789abcdefghijklmno";
export const FUZZ_ENGINE_KEY = "fuzz-engine-key-5c1e9a";
/**
 * How long a service may take to exit after SIGTERM: its shutdown bound
 * (`END_CLEANUP_TIMEOUT_MS`, 2 s here, + 5 s; docs/operations.md "Shutdown") with room
 * to spare. A process still running then is killed, and the stop counts as a hang.
 */
export const STOP_DEADLINE_MS = 30_000;

/** The real service (`main.ts`) as a child process. */
export interface ServiceUnderTest {
  base: string;
  wsBase: string;
  adminKey: string;
  /** Child exits seen (each one is a process death). */
  deaths: number;
  /** Whether the child is running. */
  alive(): boolean;
  /** The child's process id while it runs. */
  pid(): number | null;
  /** Restarts the child if it died (counted as a death) or stopped answering; resolves when it listens. */
  ensureAlive(): Promise<void>;
  /** `GET /healthz` answers 200 within `ms`. */
  healthy(ms?: number): Promise<boolean>;
  /**
   * Stops the child with SIGTERM; one still running after `deadlineMs` is killed.
   * Resolves with the names of the processes that had to be killed (empty: none).
   */
  stop(deadlineMs?: number): Promise<string[]>;
}

/**
 * Starts `main.ts` on a free loopback port with a temp KV file (or `kvPath`, shared
 * with other processes), the fuzz admin key and token secret, private targets allowed
 * and the test CA trusted; `env` adds or overrides.
 */
export async function startService(
  env: Record<string, string> = {},
  kvPath?: string,
  name = "the service",
): Promise<ServiceUnderTest> {
  const dir = await Deno.makeTempDir({ prefix: "avatar-fuzz-" });
  let child: Deno.ChildProcess | null = null;
  let running = false;
  let port = 0;
  let stopping = false;
  let killedByUs = false;
  const svc: ServiceUnderTest = {
    base: "",
    wsBase: "",
    adminKey: FUZZ_ADMIN_KEY,
    deaths: 0,
    alive: () => running,
    pid: () => running && child ? child.pid : null,
    async ensureAlive() {
      // A dying child may still count as running for a moment; ask it, not the flag.
      if (running && await svc.healthy(3000)) return;
      if (running && child) {
        const proc = child;
        const exited = await Promise.race([
          proc.status.then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), 2000)),
        ]);
        if (!exited) {
          // Alive but not answering: a hang (the fuzzer counts it), not a death.
          killedByUs = true;
          proc.kill("SIGKILL");
          await proc.status;
        }
      }
      await spawn();
    },
    async healthy(ms = 5000) {
      try {
        const res = await fetch(`${svc.base}/healthz`, {
          signal: AbortSignal.timeout(ms),
        });
        await res.body?.cancel();
        return res.status === 200;
      } catch {
        return false;
      }
    },
    async stop(deadlineMs = STOP_DEADLINE_MS) {
      stopping = true;
      const hung: string[] = [];
      if (child && running) {
        const proc = child;
        proc.kill("SIGTERM");
        let timer: ReturnType<typeof setTimeout> | undefined;
        const exited = await Promise.race([
          proc.status.then(() => true),
          new Promise<boolean>((r) =>
            timer = setTimeout(() => r(false), deadlineMs)
          ),
        ]);
        clearTimeout(timer);
        if (!exited) {
          hung.push(name);
          proc.kill("SIGKILL");
          await proc.status;
        }
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      return hung;
    },
  };
  const spawn = async () => {
    const instance = await startInstance(kvPath ?? `${dir}/fuzz.sqlite`, {
      // The same port after a restart, so sockets and clients keep their base.
      PORT: String(port),
      TOKEN_SECRET: FUZZ_TOKEN_SECRET,
      ADMIN_API_KEY: FUZZ_ADMIN_KEY,
      ...env,
    });
    const proc = instance.child;
    child = proc;
    const base = instance.base;
    running = true;
    port = Number(new URL(base).port);
    svc.base = `http://127.0.0.1:${port}`;
    svc.wsBase = `ws://127.0.0.1:${port}`;
    proc.status.then(() => {
      running = false;
      if (!stopping && !killedByUs) svc.deaths++;
      killedByUs = false;
    });
  };
  await spawn();
  return svc;
}

/** Mints an API key for `tenant` through the REST API with the admin key. */
export async function mintKey(
  svc: ServiceUnderTest,
  tenant: string,
  scopes: string[] = ["sessions:read", "sessions:write"],
): Promise<string> {
  const res = await fetch(`${svc.base}/v1/api-keys`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${svc.adminKey}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ tenant_id: tenant, scopes }),
  });
  const body = await res.json();
  if (res.status !== 201) {
    throw new Error(`mint key: ${res.status} ${JSON.stringify(body)}`);
  }
  return body.api_key;
}

/** The create body of an `external_engine` session on `engineUrl`. */
export function ecepCreateBody(
  engineUrl: string,
  engineKey = FUZZ_ENGINE_KEY,
): Record<string, unknown> {
  return {
    provider_type: "external_engine",
    transport: "websocket_fmp4",
    provider_config: {
      external_engine: {
        url: engineUrl,
        auth_headers: { "x-engine-key": engineKey },
      },
    },
  };
}

/** Creates a session with `key`; throws on anything but 200. */
export async function createSession(
  svc: ServiceUnderTest,
  key: string,
  body: Record<string, unknown>,
): Promise<{ session_id: string; client_token: string }> {
  const res = await fetch(`${svc.base}/v1/sessions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status !== 200) {
    throw new Error(`create: ${res.status} ${JSON.stringify(json)}`);
  }
  return json;
}

/** The media socket URL of a session. */
export function mediaUrl(
  svc: ServiceUnderTest,
  sessionId: string,
  token: string,
): string {
  return `${svc.wsBase}/v1/sessions/${encodeURIComponent(sessionId)}/ws?token=${
    encodeURIComponent(token)
  }`;
}

/** Another tenant's live session, watched while a fuzzer runs. */
export interface Bystander {
  /** Media segments received so far. */
  segments: number;
  /**
   * Records whether segments arrived since the last tick (call it at most every ~second;
   * the renderer sends a fragment at least every second).
   */
  tick(): void;
  /** Ends the watch: streamed throughout = the session went active and never stalled. */
  stop(): Promise<{ streamedThroughout: boolean }>;
}

/**
 * Starts the bystander: tenant "bystander" with its own key and fake engine, a
 * `websocket_fmp4` session, and a browser socket counting binary frames. A stall is a
 * tick with no new segment after 3 s without one, or the socket closing.
 */
export async function startBystander(
  svc: ServiceUnderTest,
): Promise<Bystander> {
  const engine: FakeWs = startEcepFake({ key: FUZZ_ENGINE_KEY });
  const key = await mintKey(svc, "bystander");
  const created = await createSession(svc, key, ecepCreateBody(engine.url));
  const ws = new WebSocket(
    mediaUrl(svc, created.session_id, created.client_token),
  );
  ws.binaryType = "arraybuffer";
  let segments = 0;
  let active = false;
  let closed = false;
  let stalled = false;
  let lastSegmentAt = Date.now();
  let lastTickSegments = 0;
  ws.onmessage = (e) => {
    if (typeof e.data === "string") {
      try {
        const m = JSON.parse(e.data);
        if (m.type === "session.state" && m.status === "active") active = true;
      } catch { /* not ours to judge */ }
    } else {
      segments++;
      lastSegmentAt = Date.now();
    }
  };
  ws.onclose = () => {
    closed = true;
  };
  const deadline = Date.now() + 20_000;
  while (!(active && segments > 1) && !closed && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!active || segments <= 1) stalled = true;
  const b: Bystander = {
    get segments() {
      return segments;
    },
    tick() {
      if (closed) stalled = true;
      if (segments > lastTickSegments) lastTickSegments = segments;
      else if (Date.now() - lastSegmentAt > 3000) stalled = true;
    },
    async stop() {
      b.tick();
      if (ws.readyState === WebSocket.OPEN) ws.close();
      await engine.close();
      return { streamedThroughout: !stalled };
    },
  };
  return b;
}

/**
 * Runs `fn` with the bystander ticking every 500 ms; sets `report.bystanderStreamed`
 * and adds the deaths the service saw during `fn`.
 */
export async function withBystander(
  svc: ServiceUnderTest,
  report: { bystanderStreamed: boolean; deaths: number },
  fn: () => Promise<void>,
): Promise<void> {
  const deathsBefore = svc.deaths;
  const bystander = await startBystander(svc);
  const timer = setInterval(() => bystander.tick(), 500);
  try {
    await fn();
  } finally {
    clearInterval(timer);
    report.bystanderStreamed = (await bystander.stop()).streamedThroughout &&
      svc.deaths === deathsBefore;
    report.deaths += svc.deaths - deathsBefore;
  }
}
