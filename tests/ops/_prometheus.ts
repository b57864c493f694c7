/**
 * A real Prometheus (Debian's, a test prerequisite) for the ops tests: started on a
 * loopback port of its own, scraping one target with the bearer token every second, and
 * its instant-query API.
 */
import assert from "node:assert/strict";

const PROMETHEUS = "/usr/bin/prometheus";
/** The `METRICS_TOKEN` the scraped services are started with. */
export const TOKEN = "metrics-token-0123456789abcdefghij";
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
export async function startPrometheus(dir: string, target: string) {
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
export async function query(
  api: string,
  q: string,
): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = await res.json();
  assert.equal(body.status, "success", JSON.stringify(body));
  return body.data.result;
}

const DASHBOARD = new URL(
  "../../ops/grafana/avatar-service.json",
  import.meta.url,
);

/**
 * Every query of the Grafana dashboard with its panel's title, its variables given
 * plain values: every instance, and `rateInterval` for `$__rate_interval`.
 */
export function dashboardQueries(
  rateInterval: string,
): Array<{ panel: string; expr: string }> {
  const dash = JSON.parse(Deno.readTextFileSync(DASHBOARD));
  const out: Array<{ panel: string; expr: string }> = [];
  for (const p of dash.panels) {
    for (const t of p.targets) {
      out.push({
        panel: p.title,
        expr: String(t.expr).replaceAll("$__rate_interval", rateInterval)
          .replaceAll("$instance", ".*"),
      });
    }
  }
  return out;
}
