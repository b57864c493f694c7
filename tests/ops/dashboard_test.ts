/**
 * The Grafana dashboard (ops/grafana/avatar-service.json) answers the operator's
 * questions from a real Prometheus scraping a working service: how many sessions run,
 * how full the instance is, what glass to glass its viewers get, and which engine and
 * which tenant are failing. (Grafana itself is not installable here, only Prometheus:
 * each panel's query is run as Grafana would send it, its variables filled in.)
 */
import assert from "node:assert/strict";
import { TestClock } from "../_helpers.ts";
import { reapOnce } from "../../lib/media/reaper.ts";
import {
  connectActive,
  createSession,
  type LiveStack,
  liveStack,
} from "../lib/media/_live.ts";
import {
  dashboardQueries,
  query,
  startPrometheus,
  TOKEN,
} from "./_prometheus.ts";

type Series = Awaited<ReturnType<typeof query>>;

/** Fails a created session that never connects: its connect timeout passes. */
async function failOne(s: LiveStack, clock: TestClock): Promise<void> {
  await createSession(s);
  clock.advance(61_000);
  assert.equal((await reapOnce(s.t.app.deps)).failed.length, 1);
}

/** Polls `q` until `ok` holds for its result (scrapes come every second). */
async function until(
  api: string,
  q: string,
  ok: (r: Series) => boolean,
): Promise<Series> {
  const deadline = Date.now() + 20_000;
  let r = await query(api, q);
  while (!ok(r) && Date.now() < deadline) {
    await new Promise((res) => setTimeout(res, 250));
    r = await query(api, q);
  }
  assert.ok(ok(r), `${q}: ${JSON.stringify(r)}`);
  return r;
}

Deno.test("from the dashboard's panels alone: sessions, capacity, viewers' glass to glass, the failing engine and tenant", async () => {
  const clock = new TestClock(Date.now());
  const s = await liveStack({
    METRICS_TOKEN: TOKEN,
    METRICS_TENANT_LABEL: "true",
    SESSION_CONNECT_TIMEOUT_S: "60",
    RENDER_MAX_SESSIONS: "4",
  }, { clock });
  const dir = await Deno.makeTempDir({ prefix: "avatar-dashboard-" });
  let prom: Awaited<ReturnType<typeof startPrometheus>> | undefined;
  try {
    // A failure before the first scrape: the series exists when the next one comes
    // (a counter's first sample is no increase to `rate`).
    await failOne(s, clock);
    prom = await startPrometheus(dir, new URL(s.base).host);
    const api = prom.api;
    await until(api, 'up{job="avatar"}', (r) => r[0]?.value[1] === "1");
    // Under way: one session talking to a viewer who reports what it sees, and one
    // more failing on the same engine.
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token);
    b.send({
      type: "client.stats",
      decoder: "webcodecs",
      first_frame_ms: 180,
      glass_to_glass_ms_est: 64,
    });
    await failOne(s, clock);
    const panels = new Map<string, Series>();
    for (const { panel, expr } of dashboardQueries("1m")) {
      const want = {
        "Live sessions": (r: Series) => r.some((x) => x.value[1] === "1"),
        "Capacity used per instance (render slots)": (r: Series) =>
          r.some((x) => x.value[1] === "0.25"),
        "Failing sessions by engine (per minute)": (r: Series) =>
          r.some((x) => Number(x.value[1]) > 0),
        "Failing sessions by tenant (per minute, top 10)": (r: Series) =>
          r.some((x) => Number(x.value[1]) > 0),
        "Viewers: first frame and glass to glass (p95, as their browsers report)":
          (r: Series) => r.some((x) => Number.isFinite(Number(x.value[1]))),
      }[panel];
      // Every query runs; the ones this run feeds answer.
      const r = want ? await until(api, expr, want) : await query(api, expr);
      panels.set(`${panel}: ${expr}`, r);
    }
    const of = (title: string) =>
      [...panels].filter(([k]) => k.startsWith(`${title}: `)).flatMap((
        [, v],
      ) => v);
    // How many sessions run, and how full the instance is.
    assert.deepEqual(
      of("Live sessions").map((x) => Number(x.value[1])),
      [1],
    );
    assert.deepEqual(
      of("Capacity used per instance (render slots)").map((x) =>
        Number(x.value[1])
      ),
      [0.25],
    );
    // Which engine and which tenant are failing, and why.
    const engines = of("Failing sessions by engine (per minute)");
    assert.deepEqual(
      engines.filter((x) => Number(x.value[1]) > 0).map((x) => [
        x.metric.provider,
        x.metric.reason,
      ]),
      [["external_engine", "connect_timeout"]],
    );
    assert.deepEqual(
      of("Failing sessions by tenant (per minute, top 10)")
        .filter((x) => Number(x.value[1]) > 0).map((x) => x.metric.tenant),
      ["admin"],
    );
    // What the viewer gets, as its browser reported it (seconds).
    const viewers = of(
      "Viewers: first frame and glass to glass (p95, as their browsers report)",
    ).filter((x) => Number.isFinite(Number(x.value[1])));
    assert.ok(
      viewers.some((x) => x.metric.decoder === "webcodecs"),
      JSON.stringify(viewers),
    );
    b.close();
  } finally {
    await prom?.stop();
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});
