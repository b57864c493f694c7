/**
 * A real Prometheus (Debian's, a test prerequisite) scrapes the running service with its
 * bearer token, and a PromQL query over what it scraped returns the sessions just
 * created; no scraped label value carries a session id, a key, a token or an address.
 */
import assert from "node:assert/strict";
import {
  authJson,
  engineCreateBody,
  TEST_ADMIN_KEY,
  testApp,
} from "../_helpers.ts";

const PROMETHEUS = "/usr/bin/prometheus";
const TOKEN = "metrics-token-0123456789abcdefghij";
/** Starts given up on after this many ports were taken by someone else meanwhile. */
const MAX_STARTS = 3;

/** A loopback port free now (another process may take it before it is bound). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * Prometheus scraping `target` every second, its API on a port of its own. A start
 * whose port was taken between the probe and Prometheus binding it (parallel tests)
 * is started again on another.
 */
async function startPrometheus(dir: string, target: string) {
  await Deno.writeTextFile(`${dir}/token`, TOKEN);
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    [
      "global: { scrape_interval: 1s, evaluation_interval: 1s }",
      "scrape_configs:",
      "  - job_name: avatar",
      `    authorization: { credentials_file: ${dir}/token }`,
      `    static_configs: [ { targets: ["${target}"] } ]`,
    ].join("\n") + "\n",
  );
  for (let start = 1;; start++) {
    const port = freePort();
    const child = new Deno.Command(PROMETHEUS, {
      args: [
        `--config.file=${dir}/prometheus.yml`,
        `--storage.tsdb.path=${dir}/data`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const err = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let log = "";
    const drained = (async () => {
      for (let r = await err.read(); !r.done; r = await err.read()) {
        log += r.value;
      }
    })();
    const api = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    let exited = false;
    child.status.then(() => exited = true);
    while (!exited && Date.now() < deadline) {
      const ready = await fetch(`${api}/-/ready`).then(
        (r) => (r.body?.cancel(), r.ok),
        () => false,
      );
      if (ready) {
        return {
          api,
          async stop() {
            child.kill("SIGTERM");
            await child.status;
            await drained;
          },
        };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!exited) child.kill("SIGKILL");
    await child.status;
    await drained;
    if (!/address already in use/.test(log) || start >= MAX_STARTS) {
      throw new Error(`prometheus did not start: ${log.slice(-2000)}`);
    }
  }
}

/** A PromQL instant query's result. */
async function query(
  api: string,
  q: string,
): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = await res.json();
  assert.equal(body.status, "success", JSON.stringify(body));
  return body.data.result;
}

Deno.test("a real Prometheus scrapes /metrics with the token: the sessions just created, and no id, key or address in a label", async () => {
  const dir = await Deno.makeTempDir({ prefix: "avatar-prometheus-" });
  const app = await testApp({
    METRICS_TOKEN: TOKEN,
    RENDER_MAX_SESSIONS: "8",
    MAX_CONCURRENT_SESSIONS: "8",
  });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req, info) => app.app.handler(req, info),
  );
  let prom: Awaited<ReturnType<typeof startPrometheus>> | undefined;
  try {
    const ids: string[] = [];
    for (let k = 0; k < 3; k++) {
      const res = await app.request("/v1/sessions", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify(engineCreateBody()),
      });
      assert.equal(res.status, 200);
      ids.push((await res.json()).session_id);
    }
    prom = await startPrometheus(dir, `127.0.0.1:${server.addr.port}`);
    // Scraped (every second): the target up, and the three sessions.
    const deadline = Date.now() + 20_000;
    let created = 0;
    while (Date.now() < deadline) {
      const r = await query(
        prom.api,
        'sum(avatar_sessions_created_total{job="avatar"})',
      );
      created = Number(r[0]?.value[1] ?? 0);
      if (created === 3) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(
      created,
      3,
      "the sessions just created, as Prometheus has them",
    );
    const up = await query(prom.api, 'up{job="avatar"}');
    assert.equal(up[0]?.value[1], "1");
    // Every series it scraped: its label values name no session, key, token or address.
    const all = await query(prom.api, '{job="avatar"}');
    assert.ok(all.length > 20, `${all.length} series`);
    const values = all.flatMap((s) =>
      Object.entries(s.metric)
        // The scrape target's own `instance` label is Prometheus', not ours.
        .filter(([k]) => k !== "instance")
        .map(([, v]) => v)
    );
    for (const v of values) {
      for (const id of ids) assert.ok(!v.includes(id), `${v} names a session`);
      assert.ok(!v.includes(TEST_ADMIN_KEY) && !v.includes(TOKEN), v);
      assert.ok(!/\b\d{1,3}(\.\d{1,3}){3}\b/.test(v), `${v} names an address`);
    }
  } finally {
    await prom?.stop();
    await server.shutdown();
    await app.close();
    await Deno.remove(dir, { recursive: true });
  }
});
