/**
 * The fuzzers' shared harness: a seeded random source and garbage generators, the real
 * service run as a child process (so a crash is seen as a process death, not a failed
 * test), API keys for throwaway tenants, and a bystander — another tenant's live session
 * whose media must keep flowing while the fuzzer attacks.
 */
import { startEcepFake } from "../tests/fakes/ecep_engine_fake.ts";
import type { FakeWs } from "../tests/fakes/fake_ws.ts";
import { startInstance } from "../tests/lib/media/_instance.ts";

/** A small deterministic PRNG (mulberry32): the same seed gives the same cases. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  bool(p = 0.5): boolean {
    return this.next() < p;
  }
  /** A string of up to `maxLen` characters mixing ASCII, controls, and astral/lone surrogates. */
  string(maxLen: number): string {
    const n = this.int(0, maxLen);
    const alphabets = [
      "abcdefghijklmnopqrstuvwxyz0123456789",
      "\u0000\u0001\n\r\t\"'\\/<>{}[]%&;=:?#",
      "\u00e9\u4e2d\u{1f600}\ud800\udfff\u202e\ufeff",
    ];
    let out = "";
    for (let i = 0; i < n; i++) {
      const a = this.pick(alphabets);
      out += [...a][this.int(0, [...a].length - 1)];
    }
    return out;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(0, 255);
    return out;
  }
}

/** A JSON value of a random (usually wrong) type, including the classic `{"toString":0}`. */
export function garbageValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(0, 11)) {
    case 0:
      return { toString: 0 };
    case 1:
      return { valueOf: {}, toJSON: 1 };
    case 2:
      return depth > 2 ? [] : [garbageValue(rng, depth + 1)];
    case 3:
      return rng.pick([0, -1, 1e308, -1e-308, 2 ** 53 + 1, 0.5]);
    case 4:
      return rng.bool();
    case 5:
      return null;
    case 6:
      return rng.string(40);
    case 7:
      return "x".repeat(rng.pick([1024, 70_000, 300_000]));
    case 8:
      return depth > 2 ? {} : { [rng.string(8)]: garbageValue(rng, depth + 1) };
    case 9:
      return "__proto__";
    case 10:
      return { __proto__: { polluted: true } };
    default:
      return "";
  }
}

/** What every fuzzer prints: all zeros and `bystanderStreamed: true` is a pass. */
export interface FuzzReport {
  fuzzer: string;
  cases: number;
  /** Times the service process exited while the fuzzer ran. */
  deaths: number;
  /** 5xx answers other than the retryable 503s the contract allows for capacity. */
  fivexx: number;
  /** Cases the service did not answer within the deadline (or /healthz failed after). */
  hangs: number;
  /** Whether the other tenant's live session kept streaming throughout. */
  bystanderStreamed: boolean;
  /** Short descriptions of the first few findings, for a human. */
  findings: string[];
}

/** A report with nothing counted yet. */
export function emptyReport(fuzzer: string): FuzzReport {
  return {
    fuzzer,
    cases: 0,
    deaths: 0,
    fivexx: 0,
    hangs: 0,
    bystanderStreamed: false,
    findings: [],
  };
}

/** Records a finding (kept to the first 20). */
export function addFinding(report: FuzzReport, text: string): void {
  if (report.findings.length < 20) report.findings.push(text);
}

/** One line per fuzzer, then its findings. */
export function printReport(r: FuzzReport): void {
  console.log(
    `${
      r.fuzzer.padEnd(8)
    } cases ${r.cases}  process deaths ${r.deaths}  5xx ${r.fivexx}  hangs ${r.hangs}  other tenant kept streaming: ${
      r.bystanderStreamed ? "yes" : "no"
    }`,
  );
  for (const f of r.findings) console.log(`  - ${f}`);
}

/**
 * Asserts that a run was clean: `cases` ran, and no death, 5xx or hang, and the other
 * tenant kept streaming (the findings are the failure message).
 */
export function assertClean(report: FuzzReport, cases: number): void {
  printReport(report);
  if (report.cases !== cases) {
    throw new Error(`${report.fuzzer}: ran ${report.cases} of ${cases} cases`);
  }
  const got = {
    deaths: report.deaths,
    fivexx: report.fivexx,
    hangs: report.hangs,
    bystanderStreamed: report.bystanderStreamed,
  };
  const want = { deaths: 0, fivexx: 0, hangs: 0, bystanderStreamed: true };
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(
      `${report.fuzzer}: ${JSON.stringify(got)}\n${report.findings.join("\n")}`,
    );
  }
}

export const FUZZ_ADMIN_KEY = "fuzz-admin-key-0123456789abcdefghijklmnop";
export const FUZZ_TOKEN_SECRET = "fuzz-token-secret-0123456789abcdefghijklmno";
export const FUZZ_ENGINE_KEY = "fuzz-engine-key-5c1e9a";

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
  stop(): Promise<void>;
}

/**
 * Starts `main.ts` on a free loopback port with a temp KV file (or `kvPath`, shared
 * with other processes), the fuzz admin key and token secret, private targets allowed
 * and the test CA trusted; `env` adds or overrides.
 */
export async function startService(
  env: Record<string, string> = {},
  kvPath?: string,
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
    async stop() {
      stopping = true;
      if (child && running) {
        child.kill("SIGTERM");
        await child.status;
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
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
  report: FuzzReport,
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
