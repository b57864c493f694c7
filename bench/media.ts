/**
 * Media benchmark (`deno task bench:media`). Runs the real service (`main.ts`, built-in
 * renderer) as a subprocess on a temporary KV file and the example ECEP engine
 * (`scripts/example_engine.ts`, wss with the test fixtures) in this process, then for
 * N = 1, 2, 4, 6, … live sessions: creates them over REST, connects N media sockets,
 * sends a typed turn to every session every 2 s (the engine answers with ~1 s of
 * synthetic speech) and measures over a window:
 *
 * - latency: the engine sending a response's first agent-audio frame → this process's
 *   media socket receiving the fMP4 segment that completes the second AAC access unit
 *   carrying sound (> LOUD_AU_BYTES; silence encodes to 4 bytes): with it the onset is
 *   decodable (MDCT overlap). Both ends run here, on one clock;
 * - CPU per session: utime+stime of the service process and its ffmpeg children
 *   (/proc/<pid>/stat) over the window, divided by N;
 * - RSS per session: VmRSS of the service + its encoders minus the idle baseline, / N;
 * - real time: per socket, seconds of video received (sum of fragment durations) over
 *   wall seconds, and the largest gap between segments. A session falls behind below
 *   0.97× or with a gap over 1 s, or on a render error; the step then stops.
 *
 * Runs with `-A`: Deno reads /proc only with --allow-all.
 *
 * Prints a table and one `RESULT {…}` JSON line. Options: `--window <s>` (default 15; 25
 * for N ≤ 4), `--steps 1,2,4,…`, `--budget <s>` (default 270: no new step after it).
 */
import { startExampleEngine } from "../scripts/example_engine.ts";
import {
  cpuBetween,
  MediaClient,
  quantile,
  rssKiB,
  sampleTree,
  selfTicks,
  stillRunning,
  type TreeSample,
} from "./_media_lib.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const TLS = `${ROOT}tests/fixtures/tls/`;
const ADMIN_KEY = "bench-admin-key-0123456789abcdefghijklmnopqrstuvwxyz";
const TOKEN_SECRET = "bench-token-secret-0123456789abcdefghijklmnopqrstuvwxyz";
const ENGINE_TOKEN = "bench-engine-token-0123456789";
const TURN_MS = 2000;
const WARM_MS = 3000;
/** Fragments (40 ms each) of silence a socket must have seen before the next turn. */
const QUIET_BEFORE_TURN = 8;
const LOST_AFTER_MS = 3000;
const MIN_RATE = 0.97;
const MAX_GAP_MS = 1000;
const TICKS_PER_S = 100; // CLK_TCK on Linux x86-64 and arm64

function opt(name: string, def: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : def;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// The engine, instrumented: the time each response's first agent-audio frame is sent.

type Upgrade = typeof Deno.upgradeWebSocket;

function instrumentEngine(
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

interface Service {
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

async function startService(kvPath: string): Promise<Service> {
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
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Keep warnings and errors of the service's log (JSON lines) as evidence.
  const problems: string[] = [];
  const drain = async (s: ReadableStream<Uint8Array>) => {
    let rest = "";
    const dec = new TextDecoder();
    for await (const bytes of s) {
      const lines = (rest + dec.decode(bytes, { stream: true })).split("\n");
      rest = lines.pop() ?? "";
      for (const l of lines) {
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
    if (Date.now() > deadline) throw new Error("the service did not start");
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

async function post(base: string, path: string, body?: unknown) {
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

// ---------------------------------------------------------------------------
// One step: N live sessions

interface StepResult {
  n: number;
  window_s: number;
  latency_samples: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  latency_max_ms: number;
  responses_lost: number;
  turns_skipped: number;
  cpu_per_session_pct: number;
  cpu_service_pct: number;
  cpu_encoders_pct: number;
  cpu_bench_pct: number;
  rss_per_session_mib: number;
  rss_total_mib: number;
  /** Of the RSS per session: the encoder's own (ffmpeg VmRSS / N). */
  rss_encoder_per_session_mib: number;
  /** Session status after `POST /end` (or the HTTP status when it failed) → count. */
  ends: Record<string, number>;
  loadavg: string;
  /** Service RSS once the step's sessions ended and their encoders were reaped. */
  readonly service_rss_after_end_mib: number;
  encoders: number;
  min_rate: number;
  max_gap_ms: number;
  holes: number;
  errors: string[];
  behind: boolean;
}

const pct = (cpuSeconds: number, wallMs: number) =>
  Math.round(cpuSeconds / (wallMs / 1000) * 1000) / 10;

async function runStep(
  svc: Service,
  engineUrl: string,
  clients: Map<string, MediaClient>,
  n: number,
  windowMs: number,
  baselineKiB: number,
): Promise<StepResult> {
  const ids: string[] = [];
  const mine: MediaClient[] = [];
  const ends: Record<string, number> = {};
  const after = { rssKiB: 0 };
  let lost = 0;
  let skipped = 0;
  const timers: ReturnType<typeof setTimeout>[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const r = await post(svc.base, "/v1/sessions", {
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: engineUrl,
            auth_headers: { authorization: `Bearer ${ENGINE_TOKEN}` },
          },
        },
      });
      if (r.status !== 200) {
        throw new Error(
          `create answered ${r.status} ${JSON.stringify(r.body)}`,
        );
      }
      const id = String(r.body.session_id);
      const ws = new WebSocket(
        `${svc.base.replace("http", "ws")}/v1/sessions/${
          encodeURIComponent(id)
        }/ws?token=${encodeURIComponent(String(r.body.client_token))}`,
      );
      const c = new MediaClient(ws);
      ids.push(id);
      mine.push(c);
      clients.set(id, c);
    }
    const ready = Promise.all(mine.map((c) => c.ready));
    await Promise.race([
      ready,
      sleep(30_000).then(() => {
        throw new Error("sessions did not become active within 30 s");
      }),
    ]);
    // Turns, staggered over the period.
    mine.forEach((c, i) => {
      const turn = () => {
        if (c.ws.readyState !== WebSocket.OPEN) return;
        if (c.pendingSince !== null) {
          if (performance.now() - c.pendingSince < LOST_AFTER_MS) {
            skipped++;
            return;
          }
          lost++;
          c.pendingSince = null;
        }
        if (c.quietRun < QUIET_BEFORE_TURN) {
          skipped++;
          return;
        }
        c.ws.send(JSON.stringify({ type: "text", text: "hi" }));
      };
      timers.push(setTimeout(() => {
        turn();
        timers.push(setInterval(turn, TURN_MS));
      }, (i * TURN_MS) / n));
    });
    await sleep(WARM_MS);
    for (const c of mine) c.resetWindow();
    lost = 0;
    skipped = 0;
    const a: TreeSample = await sampleTree(svc.child.pid);
    const selfA = await selfTicks();
    await sleep(windowMs);
    const b = await sampleTree(svc.child.pid);
    const selfB = await selfTicks();
    const wall = b.at - a.at;
    for (const t of timers) clearInterval(t);
    const cpu = cpuBetween(a, b, TICKS_PER_S);
    const latencies = mine.flatMap((c) => c.latencies);
    const rates = mine.map((c) => c.videoSeconds / (wall / 1000));
    const gaps = mine.map((c) =>
      Math.max(c.maxGapMs, performance.now() - c.lastArrival)
    );
    const errors = mine.flatMap((c) => c.errors);
    const closed = mine.filter((c) => c.closeCode !== null).length;
    if (closed) errors.push(`${closed} socket(s) closed`);
    const totalKiB = b.serviceRssKiB + b.encoderRssKiB;
    const minRate = Math.min(...rates);
    const maxGap = Math.max(...gaps);
    return {
      n,
      window_s: Math.round(wall / 100) / 10,
      latency_samples: latencies.length,
      latency_p50_ms: Math.round(quantile(latencies, 0.5)),
      latency_p99_ms: Math.round(quantile(latencies, 0.99)),
      latency_max_ms: Math.round(Math.max(...latencies)),
      responses_lost: lost,
      turns_skipped: skipped,
      cpu_per_session_pct: pct((cpu.service + cpu.encoders) / n, wall),
      cpu_service_pct: pct(cpu.service, wall),
      cpu_encoders_pct: pct(cpu.encoders, wall),
      cpu_bench_pct: pct((selfB - selfA) / TICKS_PER_S, wall),
      rss_per_session_mib: Math.round((totalKiB - baselineKiB) / n / 102.4) /
        10,
      rss_total_mib: Math.round(totalKiB / 102.4) / 10,
      rss_encoder_per_session_mib: Math.round(b.encoderRssKiB / n / 102.4) / 10,
      ends,
      get service_rss_after_end_mib() {
        return Math.round(after.rssKiB / 102.4) / 10;
      },
      loadavg: await loadavg(),
      encoders: b.encoders,
      min_rate: Math.round(minRate * 1000) / 1000,
      max_gap_ms: Math.round(maxGap),
      holes: mine.reduce((k, c) => k + c.holes, 0),
      errors,
      behind: minRate < MIN_RATE || maxGap > MAX_GAP_MS || errors.length > 0,
    };
  } finally {
    for (const t of timers) clearInterval(t);
    await Promise.all(ids.map(async (id) => {
      const r = await post(svc.base, `/v1/sessions/${id}/end`).catch(() =>
        null
      );
      const k = r?.status === 200 ? String(r.body.status) : `http ${r?.status}`;
      ends[k] = (ends[k] ?? 0) + 1;
    }));
    for (let i = 0; i < 100 && mine.some((c) => c.closeCode === null); i++) {
      await sleep(100);
    }
    for (const c of mine) {
      if (c.closeCode === null) c.ws.close();
    }
    for (const id of ids) clients.delete(id);
    // Wait for the encoders to be reaped before the next step.
    for (let i = 0; i < 100; i++) {
      if ((await sampleTree(svc.child.pid)).encoders === 0) break;
      await sleep(100);
    }
    after.rssKiB = await rssKiB(svc.child.pid);
  }
}

// ---------------------------------------------------------------------------

async function loadavg(): Promise<string> {
  const text = await Deno.readTextFile("/proc/loadavg").catch(() => "");
  return text.split(" ").slice(0, 3).join(" ");
}

async function machine(): Promise<Record<string, string>> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo").catch(() => "");
  return {
    nproc: String(navigator.hardwareConcurrency),
    cpu: cpuinfo.match(/model name\s*:\s*(.+)/)?.[1] ?? "unknown",
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    os: `${Deno.build.os} ${Deno.build.arch}`,
    loadavg: await loadavg(),
  };
}

function row(r: StepResult): string {
  const f = (x: number, w: number) => String(x).padStart(w);
  return [
    f(r.n, 3),
    f(r.latency_samples, 5),
    f(r.latency_p50_ms, 7),
    f(r.latency_p99_ms, 7),
    f(r.latency_max_ms, 7),
    f(r.cpu_per_session_pct, 9),
    `${f(r.cpu_service_pct, 6)} +${f(r.cpu_encoders_pct, 6)}`,
    f(r.cpu_bench_pct, 6),
    f(r.rss_per_session_mib, 9),
    f(r.rss_encoder_per_session_mib, 7),
    f(r.min_rate, 6),
    f(r.max_gap_ms, 6),
    r.loadavg.split(" ")[0].padStart(5),
    r.behind ? `BEHIND ${[...new Set(r.errors)].join(",")}` : "ok",
    Object.entries(r.ends).map(([k, v]) => `${v} ${k}`).join(", "),
  ].join("  ");
}

async function main(): Promise<void> {
  const started = performance.now();
  const budgetMs = Number(opt("budget", "270")) * 1000;
  const steps = opt("steps", "1,2,4,6,8,10,12,16,20,24").split(",").map(
    Number,
  );
  const info = await machine();
  console.log(`machine: ${JSON.stringify(info)}`);
  const clients = new Map<string, MediaClient>();
  const restore = instrumentEngine((id, at) => {
    const c = clients.get(id);
    if (c && c.pendingSince === null) c.arm(at);
  });
  const engine = startExampleEngine({
    port: 0,
    hostname: "127.0.0.1",
    cert: await Deno.readTextFile(`${TLS}localhost.crt`),
    key: await Deno.readTextFile(`${TLS}localhost.key`),
    token: ENGINE_TOKEN,
  });
  const dir = await Deno.makeTempDir({ prefix: "bench-media-" });
  const results: StepResult[] = [];
  const encoderPids = new Set<number>();
  let svc: Service | null = null;
  let baselineKiB = 0;
  let idleAfter: { service_rss_mib: number; encoders: number } | null = null;
  const orphans: number[] = [];
  const watch = setInterval(async () => {
    if (!svc) return;
    for (const pid of (await sampleTree(svc.child.pid)).perEncoder.keys()) {
      encoderPids.add(pid);
    }
  }, 1000);
  try {
    svc = await startService(`${dir}/kv.sqlite`);
    // Warm-up session (JIT, ffmpeg binary in the page cache), then the idle baseline.
    await runStep(svc, engine.url, clients, 1, 2000, 0);
    await sleep(1000);
    baselineKiB = await rssKiB(svc.child.pid);
    console.log(
      `service idle RSS after warm-up: ${(baselineKiB / 1024).toFixed(1)} MiB`,
    );
    console.log(
      "\n  N  lat.n  p50 ms  p99 ms  max ms  CPU/sess%  svc% + ffmpeg%  bench%  RSS/sess MiB  ffmpeg   rate  gap ms  load1  ok?  ends",
    );
    const queue = [...steps];
    let lastOk = 0;
    let bisected = false;
    while (queue.length > 0) {
      const n = queue.shift()!;
      if (performance.now() - started > budgetMs) {
        console.log(`(time budget reached before N=${n})`);
        break;
      }
      const windowMs = Number(opt("window", n <= 4 ? "25" : "15")) * 1000;
      const r = await runStep(
        svc,
        engine.url,
        clients,
        n,
        windowMs,
        baselineKiB,
      );
      results.push(r);
      console.log(row(r));
      if (!r.behind) {
        lastOk = Math.max(lastOk, n);
        continue;
      }
      // Once behind: no larger N; try the midpoint below once, then stop.
      queue.length = 0;
      const mid = Math.floor((lastOk + n) / 2);
      if (!bisected && mid > lastOk && mid < n) {
        bisected = true;
        queue.push(mid);
      }
    }
    await sleep(1000);
    const after = await sampleTree(svc.child.pid);
    idleAfter = {
      service_rss_mib: Math.round(after.serviceRssKiB / 102.4) / 10,
      encoders: after.encoders,
    };
    console.log(
      `after the last step: service RSS ${idleAfter.service_rss_mib} MiB, encoders running ${after.encoders}`,
    );
  } finally {
    clearInterval(watch);
    for (const c of clients.values()) c.ws.close();
    if (svc) {
      for (const pid of (await sampleTree(svc.child.pid)).perEncoder.keys()) {
        encoderPids.add(pid);
      }
      await svc.stop();
    }
    await engine.close();
    restore();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await sleep(500);
    for (const pid of encoderPids) {
      if (await stillRunning(pid, "ffmpeg")) orphans.push(pid);
    }
  }
  // The largest N that held, below the smallest N that fell behind.
  const firstBehind = Math.min(
    ...results.filter((r) => r.behind).map((r) => r.n),
  );
  const held = results.filter((r) => !r.behind && r.n < firstBehind).map((r) =>
    r.n
  );
  const maxHeld = held.length ? Math.max(...held) : 0;
  const at4 = results.find((r) => r.n === 4);
  console.log(
    `\nmax sessions at 25 fps without falling behind: ${maxHeld}${
      results.every((r) => !r.behind)
        ? " (not reached: no step fell behind)"
        : ""
    }`,
  );
  if (at4) {
    console.log(
      `target p99 < 250 ms at 4 sessions: ${
        at4.latency_p99_ms < 250 ? "met" : "MISSED"
      } (${at4.latency_p99_ms} ms, ${at4.latency_samples} samples)`,
    );
  }
  console.log(
    `encoders seen: ${encoderPids.size}; still running after the service stopped: ${orphans.length}`,
  );
  if (svc?.problems.length) {
    console.log(`service warnings/errors (${svc.problems.length}, first 5):`);
    for (const p of svc.problems.slice(0, 5)) console.log(`  ${p}`);
  }
  console.log(
    `\nRESULT ${
      JSON.stringify({
        machine: info,
        max_sessions: maxHeld,
        baseline_rss_mib: Math.round(baselineKiB / 102.4) / 10,
        idle_after: idleAfter,
        steps: results,
        encoders_seen: encoderPids.size,
        orphans,
      })
    }`,
  );
}

if (import.meta.main) await main();
