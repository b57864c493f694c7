/**
 * Soak (`deno task soak`): N sessions for M minutes against the real service (`main.ts`
 * as a subprocess on a temporary KV file, built-in renderer) and the example engine
 * (`scripts/example_engine.ts`, wss with the test fixtures) in this process, as
 * `bench/media.ts` runs them. K of the sessions show the test portrait as a photo
 * avatar (uploaded as `bench/media.ts --avatar photo` does), the others the cartoon
 * `ava`. Most are played on `websocket_fmp4` by a WebSocket client reading the fMP4,
 * driven by `bench/_soak_session.ts`: a typed turn every 4 s, every 5th cut by
 * `interrupt` and every 7th by a microphone barge-in, a client-token refresh (REST)
 * every 45 s, and every two minutes a dropped socket redialled and a takeover by a
 * second socket.
 *
 * Per minute one row: sessions alive; RSS and open handles (/proc/<pid>/fd) of the
 * service and of its ffmpeg encoders; fragment latency p50/p99 (the engine sending a
 * response's first agent audio → the fragment that makes it playable, as
 * `bench/media.ts` measures); the A/V offset of the received fragments (audio track
 * end − video track end; it jitters by the AAC frames the encoder holds) and its drift
 * (the minute's mean offset against each socket's first 2 s); the actions
 * done; and every session lost, with its reason. Then the verdicts (0 lost, RSS and
 * handles flat after the first minute, drift ≤ 40 ms, latency p99 flat) and one
 * `RESULT {…}` line.
 *
 * W of the sessions (the last ones) are `webrtc_sfu` when a Janus (`/usr/bin/janus`,
 * started as `bench/transports.ts` does) and Chromium are there: played by the browser
 * client in headless Chromium (`bench/_soak_webrtc.ts`), counted in "alive" and losses;
 * latency and A/V come from the fMP4 sessions only. Without them the run says so and
 * plays `websocket_fmp4` only.
 *
 * Options: `--sessions N` (default 8), `--minutes M` (default 60), `--photo K` (default
 * N/2 rounded down), `--webrtc W` (default N/4 rounded down, at least 1 from N = 2).
 * Stops by itself at M minutes (a hard deadline at M + 3 minutes ends it regardless)
 * and, on Ctrl-C, ends the sessions and stops the service, its encoders, Janus and
 * Chromium. Runs with `-A`: Deno reads /proc only with --allow-all.
 */
import { startExampleEngine } from "../scripts/example_engine.ts";
import { loadavg, sleep, stillRunning } from "./_media_lib.ts";
import {
  ENGINE_TOKEN,
  instrumentEngine,
  type Service,
  startService,
  TLS,
} from "./_media_service.ts";
import { addPhoto } from "./media.ts";
import {
  judge,
  latencyOf,
  type MinuteRow,
  sampleHandles,
} from "./_soak_lib.ts";
import { SoakSession } from "./_soak_session.ts";
import {
  pollRtc,
  type RtcBrowser,
  RtcSoakSession,
  startRtcBrowser,
} from "./_soak_webrtc.ts";
import { type RunningJanus, startJanus } from "../lib/sfu/mod.ts";

/** A session of either transport. */
type Soaked = SoakSession | RtcSoakSession;

const WARMUP_MINUTES = 1;
const MINUTE_MS = 60_000;
const ACTIONS = [
  "turn",
  "interrupt",
  "barge_in",
  "cut_seen",
  "refresh",
  "drop",
  "takeover",
  "redial",
];

function opt(name: string, def: number, min: number, max: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(Deno.args[i + 1]) : def;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new Error(`--${name} must be an integer in ${min}..${max}`);
  }
  return v;
}

const mib = (kib: number) => Math.round(kib / 102.4) / 10;
const round1 = (x: number) => Math.round(x * 10) / 10;

function row(r: MinuteRow): string {
  const f = (x: number | null, w: number) => String(x ?? "-").padStart(w);
  const acts = ACTIONS.map((a) => r.actions[a] ?? 0).join("/");
  const lost = r.lost.map((l) => `LOST ${l.session}: ${l.reason}`).join("; ");
  return [
    f(r.minute, 3),
    f(r.alive, 5),
    f(r.service_rss_mib, 8),
    f(r.service_fds, 7),
    f(r.encoders, 3),
    f(r.encoder_rss_mib, 8),
    f(r.encoder_fds, 7),
    f(r.latency_samples, 5),
    f(r.latency_p50_ms, 5),
    f(r.latency_p99_ms, 5),
    f(Math.round(r.av_offset_ms), 6),
    f(Math.round(r.av_drift_ms), 6),
    acts.padStart(22),
    lost || (r.problems.length ? `${r.problems.length} problem(s)` : "ok"),
  ].join("  ");
}

async function main(): Promise<void> {
  const n = opt("sessions", 8, 1, 200);
  const minutes = opt("minutes", 60, 1, 24 * 60);
  const photo = opt("photo", Math.floor(n / 2), 0, n);
  let stopping = false;
  let cleanup: (() => Promise<void>) | null = null;
  const onSignal = () => {
    if (stopping) Deno.exit(130);
    stopping = true;
    console.log(
      "\n(interrupted: ending the sessions and stopping the service)",
    );
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  const hard = setTimeout(async () => {
    console.log("(hard deadline passed: stopping)");
    await cleanup?.();
    Deno.exit(2);
  }, (minutes + 3) * MINUTE_MS);

  let webrtc = opt("webrtc", Math.floor(n / 4) || (n >= 2 ? 1 : 0), 0, n);
  let janus: RunningJanus | null = null;
  let rtc: RtcBrowser | null = null;
  if (webrtc > 0) {
    try {
      janus = await startJanus();
      await Deno.stat("/usr/bin/chromium");
    } catch (e) {
      console.log(
        `webrtc_sfu: not run — ${
          (e as Error).message.split("\n")[0]
        }; websocket_fmp4 only`,
      );
      await janus?.stop();
      janus = null;
      webrtc = 0;
    }
  }
  console.log(
    `soak: ${n} sessions (${photo} photo, ${n - photo} cartoon; ${
      n - webrtc
    } websocket_fmp4, ${webrtc} webrtc_sfu) × ${minutes} min; load ${await loadavg()}`,
  );
  const sessions = new Map<string, Soaked>();
  const restore = instrumentEngine((id, at) => {
    const c = sessions.get(id)?.client;
    if (c && c.pendingSince === null) c.arm(at);
  });
  const engine = startExampleEngine({
    port: 0,
    hostname: "127.0.0.1",
    cert: await Deno.readTextFile(`${TLS}localhost.crt`),
    key: await Deno.readTextFile(`${TLS}localhost.key`),
    token: ENGINE_TOKEN,
    log: () => {},
  });
  const dir = await Deno.makeTempDir({ prefix: "bench-soak-" });
  const encoderPids = new Set<number>();
  const rows: MinuteRow[] = [];
  const all: Soaked[] = [];
  let svc: Service | null = null;
  let ticker: ReturnType<typeof setInterval> | undefined;
  let cleaned: Promise<void> | null = null;
  const orphans: number[] = [];
  cleanup = () =>
    cleaned ??= (async () => {
      clearInterval(ticker);
      if (svc) {
        for (const p of (await sampleHandles(svc.child.pid)).encoderPids) {
          encoderPids.add(p);
        }
      }
      await Promise.all(all.map((s) => s.end().catch(() => {})));
      await svc?.stop();
      await rtc?.close();
      await janus?.stop();
      await engine.close();
      restore();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      // Encoders the service left behind are killed here, and counted below.
      await sleep(500);
      for (const pid of encoderPids) {
        if (await stillRunning(pid, "ffmpeg")) {
          orphans.push(pid);
          try {
            Deno.kill(pid, "SIGKILL");
          } catch { /* gone */ }
        }
      }
    })();
  const reported = new Set<Soaked>();
  try {
    const photoId = photo > 0 ? await addPhoto(`${dir}/kv.sqlite`) : "";
    svc = await startService(`${dir}/kv.sqlite`, {
      SESSION_MAX_DURATION_S: String(minutes * 60 + 600),
      ...janus?.env,
    });
    if (janus) rtc = await startRtcBrowser(svc);
    for (let i = 0; i < n && !stopping; i++) {
      const kind = i < photo ? "photo" : "cartoon";
      const avatar = kind === "photo" ? photoId : "ava";
      // Offsets spread each session's drops, takeovers and refreshes over time.
      const offset = Math.floor((i * 120) / n);
      const s: Soaked = rtc && i >= n - webrtc
        ? new RtcSoakSession(svc, rtc, engine.url, kind, avatar, offset)
        : new SoakSession(svc, engine.url, kind, avatar, offset);
      all.push(s);
      await s.start();
      sessions.set(s.id, s);
    }
    let polling = false;
    ticker = setInterval(async () => {
      for (const s of all) {
        if (s instanceof SoakSession) s.tick().catch(() => {});
      }
      if (!rtc || polling) return;
      polling = true;
      try {
        const polled = await pollRtc(rtc);
        for (const s of all) {
          if (s instanceof RtcSoakSession) s.tick(polled[s.id]).catch(() => {});
        }
      } catch {
        /* the page is closing */
      } finally {
        polling = false;
      }
    }, 1000);
    console.log(
      "\nmin  alive  svc MiB  svc fds  enc  enc MiB  enc fds  lat.n  p50  p99  A/V ms  drift  turn/int/barge/cut/refr/drop/take/redial  lost",
    );
    const t0 = performance.now();
    for (let m = 1; m <= minutes && !stopping; m++) {
      while (!stopping && performance.now() - t0 < m * MINUTE_MS) {
        await sleep(250);
      }
      if (stopping) break; // a partial minute is not a row
      const windows = all.map((s) => s.take());
      const h = await sampleHandles(svc.child.pid);
      for (const p of h.encoderPids) encoderPids.add(p);
      const latencies = windows.flatMap((w) => w.latencies);
      const actions: Record<string, number> = {};
      for (const w of windows) {
        for (const [k, v] of Object.entries(w.actions)) {
          actions[k] = (actions[k] ?? 0) + v;
        }
      }
      const lat = latencyOf(latencies);
      const lost = all.filter((s) => s.lost && !reported.has(s));
      for (const s of lost) reported.add(s);
      const r: MinuteRow = {
        minute: m,
        alive: all.filter((s) => !s.lost).length,
        service_rss_mib: mib(h.serviceRssKiB),
        service_fds: h.serviceFds,
        encoders: h.encoders,
        encoder_rss_mib: mib(h.encoderRssKiB),
        encoder_fds: h.encoderFds,
        latency_samples: latencies.length,
        latency_p50_ms: lat.p50,
        latency_p99_ms: lat.p99,
        av_offset_ms: round1(Math.max(0, ...windows.map((w) => w.offsetMs))),
        av_drift_ms: round1(Math.max(0, ...windows.map((w) => w.driftMs))),
        actions,
        problems: windows.flatMap((w) => w.problems),
        lost: lost.map((s) => ({
          session: s.id,
          reason: `${
            s instanceof RtcSoakSession ? "webrtc_sfu" : "websocket_fmp4"
          } ${s.kind}: ${s.lost!}`,
        })),
      };
      rows.push(r);
      console.log(row(r));
      for (const p of r.problems.slice(0, 5)) console.log(`     ${p}`);
    }
  } finally {
    await cleanup();
    clearTimeout(hard);
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
  const v = judge(rows, WARMUP_MINUTES);
  const yes = (b: boolean | null) =>
    b === null
      ? "not judged (needs ≥ 2 minutes after the warm-up)"
      : b
      ? "yes"
      : "NO";
  console.log(`\n0 sessions lost: ${yes(v.zero_lost)} (${v.sessions_lost})`);
  console.log(`RSS flat after warm-up (±5 %): ${yes(v.rss_flat)}`);
  console.log(`handles flat after warm-up (±5 %): ${yes(v.handles_flat)}`);
  console.log(
    `A/V drift ≤ 40 ms: ${
      yes(v.av_drift_within_frame)
    } (max ${v.av_drift_max_ms} ms)`,
  );
  console.log(
    `latency p99 flat: ${
      yes(v.latency_p99_flat)
    } (first after warm-up ${v.latency_p99_first_ms} ms, last ${v.latency_p99_last_ms} ms)`,
  );
  console.log(
    `encoders seen: ${encoderPids.size}; left running after the service stopped: ${orphans.length}`,
  );
  if (svc?.problems.length) {
    console.log(`service warnings/errors (${svc.problems.length}, first 5):`);
    for (const p of svc.problems.slice(0, 5)) console.log(`  ${p}`);
  }
  console.log(
    `\nRESULT ${
      JSON.stringify({
        sessions: n,
        photo,
        minutes,
        completed_minutes: rows.length,
        webrtc,
        transports: webrtc
          ? ["websocket_fmp4", "webrtc_sfu"]
          : ["websocket_fmp4"],
        verdict: v,
        lost: rows.flatMap((r) => r.lost),
        orphans,
        minutes_rows: rows,
      })
    }`,
  );
  if (stopping) Deno.exit(130);
}

if (import.meta.main) await main();
