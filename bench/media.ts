/**
 * Media benchmark (`deno task bench:media`). Runs the real service (`main.ts`, built-in
 * renderer) as a subprocess on a temporary KV file and the example ECEP engine
 * (`scripts/example_engine.ts`, wss with the test fixtures) in this process, then for
 * N = 1, 2, 4, 6, 8, 12, … 40 live sessions: creates them over REST, connects N media sockets,
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
 * for N ≤ 4), `--steps 1,2,4,…` (default up to 40, stopping at the first that falls
 * behind), `--budget <s>` (default 420: no new step after it), `--avatar <id>` (default
 * `ava`, 384×384; `ava-hd` for 512×512; `photo`: the test portrait uploaded as a photo
 * avatar with `deno task avatars add` into the bench's KV, 512×512, DECISIONS 12),
 * `--paint-workers <n>` (the service's `PAINT_WORKERS`; 0 paints photos on its event
 * loop). The CPU columns: the service (its event loop alone in brackets) + its ffmpegs;
 * `rep.%`: frames streamed with the last picture again (`avatar_render_frames_total`),
 * the share a painter behind did not paint.
 */
import { kvCounts, metricsText, perSessionMinute } from "./_kv_sizing.ts";

/** Frames the service streamed so far: painted for them, and repeated. */
async function frameCounts(
  base: string,
): Promise<{ painted: number; repeated: number }> {
  const text = await metricsText(base);
  const n = (p: string) =>
    Number(
      text.match(
        new RegExp(
          `^avatar_render_frames_total\\{picture="${p}"\\} (\\d+)$`,
          "m",
        ),
      )?.[1] ?? 0,
    );
  return { painted: n("painted"), repeated: n("repeated") };
}
import { startExampleEngine } from "../scripts/example_engine.ts";
import {
  loadavg,
  type MediaClient,
  rssKiB,
  sampleTree,
  sleep,
  stillRunning,
} from "./_media_lib.ts";
import {
  ENGINE_TOKEN,
  instrumentEngine,
  type Service,
  startService,
  TLS,
} from "./_media_service.ts";
import { runStep, type StepResult } from "./_media_step.ts";

function opt(name: string, def: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : def;
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
    `${f(r.cpu_service_pct, 6)} (${f(r.cpu_event_loop_pct, 5)}) +${
      f(r.cpu_encoders_pct, 6)
    }`,
    f(r.cpu_bench_pct, 6),
    f(r.rss_per_session_mib, 9),
    f(r.rss_encoder_per_session_mib, 7),
    f(r.min_rate, 6),
    f(r.repeated_pct ?? 0, 6),
    f(r.max_gap_ms, 6),
    r.loadavg.split(" ")[0].padStart(5),
    r.behind ? `BEHIND ${[...new Set(r.errors)].join(",")}` : "ok",
    Object.entries(r.ends).map(([k, v]) => `${v} ${k}`).join(", "),
  ].join("  ");
}

/**
 * Uploads the test portrait as the operator tenant's photo avatar into the KV at
 * `kvPath`, the way an operator does (`deno task avatars add`); its id.
 */
export async function addPhoto(kvPath: string): Promise<string> {
  const photo = new URL(
    "../tests/fixtures/photo/grace_hopper.jpg",
    import.meta.url,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "task",
      "avatars",
      "add",
      "--tenant",
      "admin",
      "--name",
      "Bench",
      "--photo",
      photo.pathname,
      "--consent",
    ],
    env: { KV_PATH: kvPath },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`avatars add: ${new TextDecoder().decode(out.stderr)}`);
  }
  const line = new TextDecoder().decode(out.stdout).trim().split("\n").pop()!;
  const id = (JSON.parse(line) as { avatar_id: string }).avatar_id;
  console.log(`photo avatar ${id} (512×512) from ${photo.pathname}`);
  return id;
}

async function main(): Promise<void> {
  const started = performance.now();
  const budgetMs = Number(opt("budget", "420")) * 1000;
  const steps = opt("steps", "1,2,4,6,8,12,16,20,24,28,32,40").split(",")
    .map(Number);
  let avatarId = opt("avatar", "ava");
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
    if (avatarId === "photo") avatarId = await addPhoto(`${dir}/kv.sqlite`);
    // `--paint-workers N`: the service's PAINT_WORKERS (0: photos painted on the
    // event loop); by default the service's own (one per core).
    const workers = opt("paint-workers", "");
    svc = await startService(
      `${dir}/kv.sqlite`,
      workers ? { PAINT_WORKERS: workers } : {},
    );
    // Warm-up session (JIT, ffmpeg binary in the page cache), then the idle baseline.
    await runStep(svc, engine.url, clients, 1, 2000, 0, avatarId);
    await sleep(1000);
    baselineKiB = await rssKiB(svc.child.pid);
    console.log(
      `service idle RSS after warm-up: ${(baselineKiB / 1024).toFixed(1)} MiB`,
    );
    console.log(
      "\n  N  lat.n  p50 ms  p99 ms  max ms  CPU/sess%  svc% (loop%) + ffmpeg%  bench%  RSS/sess MiB  ffmpeg   rate  rep.%  gap ms  load1  ok?  ends",
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
      const kv0 = await kvCounts(svc.base), t0 = performance.now();
      const f0 = await frameCounts(svc.base);
      const r = await runStep(
        svc,
        engine.url,
        clients,
        n,
        windowMs,
        baselineKiB,
        avatarId,
      );
      r.kv = perSessionMinute(
        kv0,
        await kvCounts(svc.base),
        n,
        performance.now() - t0,
      );
      const f1 = await frameCounts(svc.base);
      const streamed = f1.painted - f0.painted + f1.repeated - f0.repeated;
      r.repeated_pct = streamed > 0
        ? Math.round((f1.repeated - f0.repeated) / streamed * 1000) / 10
        : 0;
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
    for (const r of results) {
      const top = (r.kv ?? []).slice(0, 8)
        .map((k) => `${k.op} ${k.prefix} ${k.per_session_minute}`);
      console.log(`KV ops per session-minute at N=${r.n}: ${top.join(", ")}`);
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
  const at16 = results.find((r) => r.n === 16);
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
  if (at16) {
    console.log(
      `target p99 < 100 ms at 16 sessions: ${
        at16.latency_p99_ms < 100 ? "met" : "MISSED"
      } (${at16.latency_p99_ms} ms, ${at16.latency_samples} samples)`,
    );
  }
  console.log(
    `target ≥ 24 sessions held: ${
      maxHeld >= 24 ? "met" : "MISSED"
    } (${maxHeld})`,
  );
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
