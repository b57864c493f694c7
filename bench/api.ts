/**
 * API benchmark (`deno task bench:api`). Starts, as subprocesses, a bare `Deno.serve`
 * hello-JSON handler and the real service (`main.ts` on a temporary KV file), and
 * drives them from separate processes at 64 connections:
 *
 * 1. bare hello JSON;
 * 2. authenticated `GET /v1/sessions/{id}` (status read) of one session, every
 *    connection reading the same session;
 * 3. the same status read spread over `--sessions` (default 64) sessions, round robin:
 *    concurrent requests then read different sessions, so the KV reads of concurrent
 *    requests (merged by lib/kv/batch.ts) share only the API key, as in real traffic;
 * 4. create + end attempt: a wrk Lua script that follows every `POST /v1/sessions` with a
 *    `POST /v1/sessions/{id}/end` of the session it created. No media socket connects, so
 *    the session is still `created` and every end answers 409 `AVTR_SESSION_CONFLICT`:
 *    this measures session creation plus the end path up to its state check, not a real
 *    end (a real end needs a live engine and renderer; `deno task bench:media` ends live
 *    sessions).
 *
 * Throughput comes from `wrk`: after a warm-up, `--rounds` rounds each run 1, 2 and 3
 * back to back, and one more run of 1 closes the last round. Each service run is
 * compared with the bare rate interpolated at its midpoint between the bare runs before
 * and after it, and a ratio is the median of the rounds' (the machine is shared and its
 * speed drifts from minute to minute). Latency comes from
 * `bench/_loadgen.ts`, which times every request (see there why wrk's latency figures
 * are not used). Prints requests/s, the ratios, latency percentiles and the machine.
 * `bench/api.ts --bare <port>` is the bare server itself.
 *
 * Options: `--duration <s>` (a run, default 6), `--rounds <n>` (default 5),
 * `--connections <n>` (default 64), `--threads <n>` (wrk threads, default 1 so that
 * the load generator and the server each get a core), `--sessions <n>` (default 64).
 */

import type { LoadResult } from "./_loadgen.ts";
import {
  luaGet,
  luaGetPaths,
  luaPairs,
  resultOf,
  runWrk,
  WRK,
  type WrkResult,
} from "./_wrk.ts";

import { freePort, spawn, stop, waitReady } from "./_server_process.ts";
const ROOT = new URL("..", import.meta.url).pathname;
const ADMIN_KEY = "bench-admin-key-0123456789abcdefghijklmnopqrstuvwxyz";
const TOKEN_SECRET = "bench-token-secret-0123456789abcdefghijklmnopqrstuvwxyz";

function arg(name: string, def: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : def;
}

/** Seconds a run (wrk and the latency generator alike). */
const DURATION = arg("duration", 6);
const WRK_OPTIONS = {
  threads: arg("threads", 1),
  connections: arg("connections", 64),
  seconds: DURATION,
};

async function bareServer(port: number): Promise<void> {
  const body = JSON.stringify({ hello: "world" });
  Deno.serve(
    { hostname: "127.0.0.1", port, onListen: () => {} },
    () =>
      new Response(body, {
        headers: { "content-type": "application/json; charset=utf-8" },
      }),
  );
  await new Promise(() => {});
}

async function machine(): Promise<Record<string, string>> {
  // Deno reads /proc only with --allow-all; `cat` needs just --allow-run.
  const cpuinfo = await new Deno.Command("cat", {
    args: ["/proc/cpuinfo"],
    stdout: "piped",
  }).output().then((o) => new TextDecoder().decode(o.stdout)).catch(() => "");
  const model = cpuinfo.match(/model name\s*:\s*(.+)/)?.[1] ?? "unknown";
  const wrk = await new Deno.Command(WRK, { args: ["-v"], stdout: "piped" })
    .output().then((o) => new TextDecoder().decode(o.stdout).split("\n")[0])
    .catch(() => "unknown");
  return {
    nproc: String(navigator.hardwareConcurrency),
    cpu: model,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    wrk: wrk.trim(),
    os: `${Deno.build.os} ${Deno.build.arch}`,
  };
}

async function api(
  base: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(base + path, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** A wrk run's rate and counts (wrk's latency figures are not per request: see _loadgen.ts). */
function fmt(r: WrkResult): string {
  return `${r.rps.toFixed(0).padStart(8)} req/s   ${JSON.stringify(r.counts)}${
    r.socket_errors ? `   socket errors ${r.socket_errors}` : ""
  }`;
}

/** Runs `bench/_loadgen.ts` as a process of its own against `base`. */
async function runLoadgen(
  base: string,
  paths: string[],
  apiKey: string | null,
): Promise<LoadResult> {
  const url = new URL(base);
  const args = [
    "run",
    "--allow-net",
    "bench/_loadgen.ts",
    "--host",
    url.hostname,
    "--port",
    url.port,
    "--connections",
    String(arg("connections", 64)),
    "--duration",
    String(DURATION),
  ];
  for (const p of paths) args.push("--path", p);
  if (apiKey) args.push("--header", `Authorization: Bearer ${apiKey}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return resultOf<LoadResult>(out, "load generator");
}

function fmtLatency(r: LoadResult): string {
  const f = (x: number) => x.toFixed(2).padStart(6);
  return `${String(r.rps).padStart(8)} req/s   mean ${
    f(r.mean_ms)
  } ms (Little's law bound ${f(r.mean_bound_ms)})   p50 ${f(r.p50_ms)}   p90 ${
    f(r.p90_ms)
  }   p99 ${f(r.p99_ms)}   p99.9 ${f(r.p999_ms)}   max ${f(r.max_ms)} ms   ${
    JSON.stringify(r.statuses)
  }`;
}

/** A wrk run with the time of its midpoint (ms), and its ratio to bare once known. */
interface Timed extends WrkResult {
  at: number;
  ratio?: number;
  bare_rps?: number;
}

async function timed(go: () => Promise<WrkResult>): Promise<Timed> {
  const start = performance.now();
  const res = await go();
  return { ...res, at: (start + performance.now()) / 2 };
}

/** The bare rate at time `at`, interpolated between the bare runs `a` and `b`. */
function bareAt(a: Timed, b: Timed, at: number): number {
  const f = Math.min(1, Math.max(0, (at - a.at) / (b.at - a.at)));
  return a.rps + (b.rps - a.rps) * f;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main(): Promise<void> {
  const conns = arg("connections", 64);
  const rounds = arg("rounds", 5);
  const info = await machine();
  console.log(`machine: ${JSON.stringify(info)}`);
  console.log(
    `wrk: ${
      arg("threads", 1)
    } thread(s), ${conns} connections, ${DURATION} s a run, ${rounds} rounds; latency: bench/_loadgen.ts, ${conns} connections, ${DURATION} s\n`,
  );

  // Both servers run for the whole bench; the one not measured is idle.
  const barePort = freePort();
  const bare = spawn(
    ["run", "--allow-net", "bench/api.ts", "--bare", String(barePort)],
    {},
    barePort,
  );
  const kvPath = await Deno.makeTempFile({ suffix: ".kv" });
  const port = freePort();
  const service = spawn(["run", "-A", "main.ts"], {
    PORT: String(port),
    KV_PATH: kvPath,
    ADMIN_API_KEY: ADMIN_KEY,
    TOKEN_SECRET,
    RATE_LIMIT_PER_MINUTE: "100000000",
    MAX_CONCURRENT_SESSIONS: "10000000",
    RENDER_MAX_SESSIONS: "10000000",
  }, port);
  const rows: Record<string, Timed>[] = [];
  const latency: Record<string, LoadResult> = {};
  let pairs: WrkResult | undefined;
  try {
    await waitReady(bare, "/");
    await waitReady(service, "/healthz");
    const minted = await api(service.base, "/v1/api-keys", ADMIN_KEY, {
      tenant_id: "bench",
      scopes: ["sessions:read", "sessions:write"],
      name: "bench",
    });
    if (minted.status !== 201) {
      throw new Error(`POST /v1/api-keys answered ${minted.status}`);
    }
    const key = String(minted.body.api_key);
    const createBody = {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://example.com/engine",
          auth_headers: { authorization: "Bearer engine-credential" },
        },
      },
      transport: "websocket_fmp4",
    };
    const paths: string[] = [];
    while (paths.length < arg("sessions", 64)) {
      const more = await api(service.base, "/v1/sessions", key, createBody);
      if (more.status !== 200) {
        throw new Error(
          `POST /v1/sessions answered ${more.status} ${
            JSON.stringify(more.body)
          }`,
        );
      }
      paths.push(`/v1/sessions/${more.body.session_id}`);
    }
    const one = service.base + paths[0];
    const scenarios: [string, () => Promise<WrkResult>][] = [
      ["bare", () => runWrk(bare.base + "/", luaGet(null), WRK_OPTIONS)],
      ["status", () => runWrk(one, luaGet(key), WRK_OPTIONS)],
      [
        "status_spread",
        () => runWrk(service.base + "/", luaGetPaths(key, paths), WRK_OPTIONS),
      ],
    ];
    // Warm-up (JIT, KV page cache), not reported.
    for (const [, go] of scenarios) await go();
    // Bare and service alternate, and one more bare run closes the last round, so
    // every service run lies between two bare runs made seconds apart on this shared
    // machine; its ratio is to the bare rate interpolated at its midpoint.
    const bares: Timed[] = [];
    for (let r = 0; r < rounds; r++) {
      const row: Record<string, Timed> = {};
      for (const [name, go] of scenarios) row[name] = await timed(go);
      bares.push(row.bare);
      rows.push(row);
    }
    bares.push(await timed(scenarios[0][1]));
    rows.forEach((row, r) => {
      const [a, b] = [bares[r], bares[r + 1]];
      for (const name of ["status", "status_spread"]) {
        const bare = bareAt(a, b, row[name].at);
        row[name].ratio = row[name].rps / bare;
        row[name].bare_rps = Math.round(bare);
      }
      console.log(
        `round ${r + 1}: bare ${a.rps.toFixed(0)} → ${
          b.rps.toFixed(0)
        } req/s, status read ${row.status.rps.toFixed(0)} (${
          row.status.ratio!.toFixed(3)
        } of bare), ${paths.length} sessions ${
          row.status_spread.rps.toFixed(0)
        } (${row.status_spread.ratio!.toFixed(3)} of bare)   ${
          JSON.stringify(row.status.counts)
        } ${JSON.stringify(row.status_spread.counts)}`,
      );
    });
    latency.bare = await runLoadgen(bare.base, ["/"], null);
    latency.status = await runLoadgen(service.base, [paths[0]], key);
    latency.status_spread = await runLoadgen(service.base, paths, key);
    console.log(`\nlatency (every request timed, closed loop):`);
    console.log(`bare hello JSON         ${fmtLatency(latency.bare)}`);
    console.log(`GET /v1/sessions/{id}   ${fmtLatency(latency.status)}`);
    console.log(
      `GET ${paths.length} sessions r-robin ${
        fmtLatency(latency.status_spread)
      }`,
    );

    pairs = await runWrk(
      service.base + "/v1/sessions",
      luaPairs(key, JSON.stringify(createBody)),
      WRK_OPTIONS,
    );
  } finally {
    await stop(service);
    await stop(bare);
    for (const suffix of ["", "-shm", "-wal"]) {
      await Deno.remove(kvPath + suffix).catch(() => {});
    }
  }
  // Every end here meets a `created` session (no media socket connects), so it
  // answers 409 AVTR_SESSION_CONFLICT: an end attempt, not a real end.
  const c = pairs.counts;
  const ends = Object.entries(c)
    .filter(([k]) =>
      k.startsWith("end_") || k === "409_AVTR_SESSION_CONFLICT" ||
      k === "409_AVTR_SESSION_ENDED"
    )
    .reduce((n, [, v]) => n + v, 0);
  const pairRate = ends / pairs.seconds;
  const createRate = (c.create_200 ?? 0) / pairs.seconds;
  console.log(`\ncreate+end-attempt reqs ${fmt(pairs)}`);
  console.log(
    `creates                 ${createRate.toFixed(0).padStart(8)} /s`,
  );
  console.log(
    `create + end attempt    ${
      pairRate.toFixed(0).padStart(8)
    } pairs/s   (ends answer 409: sessions never go active here; real ends: bench:media)`,
  );

  const ratio = median(rows.map((r) => r.status.ratio!));
  const spread = median(rows.map((r) => r.status_spread.ratio!));
  const n = arg("sessions", 64);
  console.log(
    `\nstatus read / bare      ${
      ratio.toFixed(3)
    } (one session, median of ${rounds} rounds)`,
  );
  console.log(
    `status read / bare      ${
      spread.toFixed(3)
    } (${n} sessions, median of ${rounds} rounds)`,
  );
  const mark = (ok: boolean) => ok ? "met" : "MISSED";
  console.log(
    `targets: ratio >= 0.25 ${mark(ratio >= 0.25)} (one session), ${
      mark(spread >= 0.25)
    } (${n} sessions); p99 < 10 ms ${
      mark(latency.status.p99_ms < 10)
    } (one session), ${
      mark(latency.status_spread.p99_ms < 10)
    } (${n} sessions); create + end attempt >= 500 pairs/s ${
      mark(pairRate >= 500)
    }`,
  );
  console.log(
    `\nRESULTS ${
      JSON.stringify({
        machine: info,
        rounds: rows,
        latency,
        pairs,
        ratio: { status: ratio, status_spread: spread },
      })
    }`,
  );
}

if (Deno.args[0] === "--bare") {
  await bareServer(Number(Deno.args[1]));
} else if (import.meta.main) {
  await main();
}
