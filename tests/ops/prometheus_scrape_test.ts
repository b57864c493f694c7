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
import { query, startPrometheus, TOKEN } from "./_prometheus.ts";

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
