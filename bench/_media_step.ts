/**
 * One step of the media benchmark (`bench/media.ts`): N live sessions created over REST,
 * N media sockets, a typed turn to every session every 2 s, and the window's latency,
 * CPU, RSS and real-time readings.
 */
import {
  cpuBetween,
  loadavg,
  MediaClient,
  quantile,
  rssKiB,
  sampleTree,
  selfTicks,
  sleep,
  type TreeSample,
} from "./_media_lib.ts";
import { ENGINE_TOKEN, post, type Service } from "./_media_service.ts";

const TURN_MS = 2000;
const WARM_MS = 3000;
/** Fragments (40 ms each) of silence a socket must have seen before the next turn. */
const QUIET_BEFORE_TURN = 8;
const LOST_AFTER_MS = 3000;
const MIN_RATE = 0.97;
const MAX_GAP_MS = 1000;
const TICKS_PER_S = 100; // CLK_TCK on Linux x86-64 and arm64

/** What one step measured. */
export interface StepResult {
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
  /** The service's main thread alone (its event loop). */
  cpu_event_loop_pct: number;
  /** Frames streamed with the last picture again over the step, % (bench:media). */
  repeated_pct?: number;
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
  /** KV operations per session-minute over the step, by kind and key prefix. */
  kv?: Array<{ op: string; prefix: string; per_session_minute: number }>;
}

const pct = (cpuSeconds: number, wallMs: number) =>
  Math.round(cpuSeconds / (wallMs / 1000) * 1000) / 10;

/**
 * Runs one step of `n` sessions over a window of `windowMs`; `clients` maps session ids
 * to their sockets while the step runs (the engine hook looks them up), `baselineKiB` is
 * the idle service's RSS, `avatarId` the catalog entry every session shows. Ends the
 * sessions and waits for their encoders to go.
 */
export async function runStep(
  svc: Service,
  engineUrl: string,
  clients: Map<string, MediaClient>,
  n: number,
  windowMs: number,
  baselineKiB: number,
  avatarId = "ava",
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
        avatar_config: { avatar_id: avatarId },
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
      cpu_event_loop_pct: pct(cpu.loop, wall),
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
