/**
 * The operator's Prometheus files (ops/, docs/monitoring.md#dashboard-and-alerts) against the real
 * thing: Debian's `promtool` (a test prerequisite, scripts/test_prereqs.ts) checks the
 * alert rules and runs their cases (tests/ops/alerts_test.yml), checks the service's
 * real `/metrics` exposition, and parses every query of the Grafana dashboard; and every
 * metric the rules and the dashboard name is one the service exposes.
 */
import assert from "node:assert/strict";
import {
  authJson,
  engineCreateBody,
  TEST_ADMIN_KEY,
  testApp,
} from "../_helpers.ts";
import { dashboardQueries, TOKEN } from "./_prometheus.ts";

const PROMTOOL = "/usr/bin/promtool";
const ROOT = new URL("../../", import.meta.url).pathname;
const RULES = `${ROOT}ops/prometheus/alerts.yml`;

/** Runs promtool with `args` (and `stdin`); its exit code and output. */
async function promtool(
  args: string[],
  stdin?: string,
): Promise<{ code: number; out: string }> {
  const child = new Deno.Command(PROMTOOL, {
    args,
    cwd: ROOT,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const { code, stdout, stderr } = await child.output();
  const dec = new TextDecoder();
  return { code, out: dec.decode(stdout) + dec.decode(stderr) };
}

/** The service's exposition after a session was created (its session metrics too). */
async function exposition(): Promise<string> {
  const app = await testApp({ METRICS_TOKEN: TOKEN });
  try {
    const res = await app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify(engineCreateBody()),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    return await (await app.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).text();
  } finally {
    await app.close();
  }
}

Deno.test("the alert rules load, and each fires on its cases and not before", async () => {
  const check = await promtool(["check", "rules", RULES]);
  assert.equal(check.code, 0, check.out);
  const cases = await promtool(["test", "rules", "tests/ops/alerts_test.yml"]);
  assert.equal(cases.code, 0, cases.out);
  assert.match(cases.out, /SUCCESS/);
});

Deno.test("/metrics passes promtool's check of the exposition format", async () => {
  const res = await promtool(["check", "metrics"], await exposition());
  assert.equal(res.code, 0, res.out);
});

Deno.test("every dashboard query is PromQL, and the dashboard and the rules name only metrics the service exposes", async () => {
  const queries = dashboardQueries("5m").map((q) => q.expr);
  assert.ok(queries.length >= 10, `${queries.length} queries`);
  // promtool parses expressions as it checks rules: each query as a recording rule.
  const dir = await Deno.makeTempDir({ prefix: "avatar-dashboard-" });
  try {
    const file = `${dir}/queries.yml`;
    const rules = queries.map((q, i) =>
      `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(q)}`
    );
    await Deno.writeTextFile(
      file,
      `groups:\n  - name: dashboard\n    rules:\n${rules.join("\n")}\n`,
    );
    const check = await promtool(["check", "rules", file]);
    assert.equal(check.code, 0, check.out);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const exposed = new Set(
    [...(await exposition()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]),
  );
  const named = [
    ...queries.join("\n").matchAll(/\bavatar_[a-z_]+/g),
    ...Deno.readTextFileSync(RULES).matchAll(/\bavatar_[a-z_]+/g),
  ].map((m) => m[0].replace(/_(bucket|sum|count)$/, ""));
  for (const name of new Set(named)) {
    assert.ok(exposed.has(name), `${name} is not exposed by /metrics`);
  }
});
