/**
 * First-fragment benchmark (`deno task bench:first-fragment`): how soon a media socket
 * shows a picture. Runs the real service (`main.ts`) as a subprocess and the example
 * ECEP engine in this process, then, one session at a time (nothing else running):
 *
 * - connect: a fresh session's socket `open` → its init segment → its first fragment
 *   (a keyframe), and → `active`;
 * - takeover: a second socket for the same live session, `open` → init → first fragment
 *   (the session's encoder keeps running; the new socket gets the current GOP at once).
 *
 * Prints p50/p95/max per measure and one `RESULT {…}` JSON line. `--rounds <n>` (default
 * 20). Runs with `-A`.
 */
import { startExampleEngine } from "../scripts/example_engine.ts";
import { quantile, sleep } from "./_media_lib.ts";
import { ENGINE_TOKEN, post, startService, TLS } from "./_media_service.ts";

function opt(name: string, def: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : def;
}

interface Timings {
  init: number;
  fragment: number;
  active: number;
}

/** Opens a media socket and times, from its `open` event, the init, first fragment and active. */
function timeSocket(url: string): Promise<{ ws: WebSocket; t: Timings }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    let opened = 0;
    let binaries = 0;
    const t: Timings = { init: NaN, fragment: NaN, active: NaN };
    const done = () => {
      if (!Number.isNaN(t.fragment) && !Number.isNaN(t.active)) {
        clearTimeout(timer);
        resolve({ ws, t });
      }
    };
    const timer = setTimeout(
      () => reject(new Error("no media in 20 s")),
      20_000,
    );
    ws.onopen = () => opened = performance.now();
    ws.onmessage = (e) => {
      const at = performance.now() - opened;
      if (typeof e.data === "string") {
        const m = JSON.parse(e.data);
        if (m.type === "session.state" && m.status === "active") t.active = at;
        if (m.type === "error" && m.fatal) reject(new Error(m.code));
      } else if (++binaries === 1) {
        t.init = at;
      } else if (binaries === 2) {
        t.fragment = at;
      }
      done();
    };
    ws.onclose = (e) => reject(new Error(`closed ${e.code}`));
  });
}

function summary(xs: number[]) {
  const r = (x: number) => Math.round(x * 10) / 10;
  return {
    p50: r(quantile(xs, 0.5)),
    p95: r(quantile(xs, 0.95)),
    max: r(Math.max(...xs)),
  };
}

async function main(): Promise<void> {
  const rounds = Number(opt("rounds", "20"));
  const engine = startExampleEngine({
    port: 0,
    hostname: "127.0.0.1",
    cert: await Deno.readTextFile(`${TLS}localhost.crt`),
    key: await Deno.readTextFile(`${TLS}localhost.key`),
    token: ENGINE_TOKEN,
  });
  const dir = await Deno.makeTempDir({ prefix: "bench-first-" });
  const svc = await startService(`${dir}/kv.sqlite`);
  const connect: Timings[] = [];
  const takeover: Timings[] = [];
  try {
    for (let i = 0; i <= rounds; i++) {
      const r = await post(svc.base, "/v1/sessions", {
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: engine.url,
            auth_headers: { authorization: `Bearer ${ENGINE_TOKEN}` },
          },
        },
      });
      if (r.status !== 200) throw new Error(`create: ${r.status}`);
      const url = `${svc.base.replace("http", "ws")}/v1/sessions/${
        encodeURIComponent(String(r.body.session_id))
      }/ws?token=`;
      const first = await timeSocket(
        url + encodeURIComponent(r.body.client_token),
      );
      await sleep(500);
      const second = await timeSocket(
        url + encodeURIComponent(r.body.stream_metadata.session_token),
      );
      // Round 0 warms the JIT and the page cache; it is not counted.
      if (i > 0) (connect.push(first.t), takeover.push(second.t));
      second.ws.close();
      await post(svc.base, `/v1/sessions/${r.body.session_id}/end?force=true`);
    }
  } finally {
    await svc.stop();
    await engine.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const result = {
    rounds,
    connect: {
      init_ms: summary(connect.map((t) => t.init)),
      first_fragment_ms: summary(connect.map((t) => t.fragment)),
      active_ms: summary(connect.map((t) => t.active)),
    },
    takeover: {
      init_ms: summary(takeover.map((t) => t.init)),
      first_fragment_ms: summary(takeover.map((t) => t.fragment)),
    },
  };
  console.log("socket open → (p50 / p95 / max, ms)");
  for (const [k, v] of Object.entries(result.connect)) {
    console.log(`  connect  ${k.padEnd(18)} ${v.p50} / ${v.p95} / ${v.max}`);
  }
  for (const [k, v] of Object.entries(result.takeover)) {
    console.log(`  takeover ${k.padEnd(18)} ${v.p50} / ${v.p95} / ${v.max}`);
  }
  console.log(`RESULT ${JSON.stringify(result)}`);
}

if (import.meta.main) await main();
