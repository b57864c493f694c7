import assert from "node:assert/strict";
import { emptyReport, type ServiceUnderTest } from "../../fuzz/_lib.ts";
import { type RestFuzzReport, runCase, runRestFuzz } from "../../fuzz/rest.ts";
import type { CaseContext, RestCase } from "../../fuzz/rest_cases.ts";

Deno.test("REST fuzzer on the topology: a few hundred cases, handoff attacks on the node among them, no death, no 5xx, no hang, no echoed secret; the other tenant streams throughout", async () => {
  const report = await runRestFuzz({ cases: 400, seed: 20261123 });
  const findings = report.findings.join("\n");
  assert.equal(report.cases, 400);
  assert.equal(report.deaths, 0, findings);
  assert.equal(report.fivexx, 0, findings);
  assert.equal(report.hangs, 0, findings);
  assert.equal(report.secretEchoes, 0, findings);
  assert.equal(report.bystanderStreamed, true, findings);
  // The cases reach the routes: successes, refusals of every kind, not just 404s.
  for (const status of [200, 400, 401, 404, 405, 413]) {
    assert.ok(
      (report.statuses[status] ?? 0) > 0,
      `no ${status}: ${JSON.stringify(report.statuses)}`,
    );
  }
  // The handoff cases reach the node's checks: refused heads, stalled and oversized
  // bodies, signed garbage.
  for (const status of [400, 401, 408, 413]) {
    assert.ok(
      (report.handoffStatuses[status] ?? 0) > 0,
      `no handoff ${status}: ${JSON.stringify(report.handoffStatuses)}`,
    );
  }
  // The photo uploads reach the decoder: bombs and damaged portraits refused (400).
  assert.ok(
    (report.uploadStatuses[400] ?? 0) > 10,
    `uploads: ${JSON.stringify(report.uploadStatuses)}`,
  );
});

Deno.test("REST fuzzer counts a 500, a hang and an echoed secret when a server gives them", async () => {
  const secret = "fzsecretabcdefghijklmnopqrst";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/500") return new Response("{}", { status: 500 });
      if (path === "/503") {
        return Response.json({ code: "AVTR_RENDER_CAPACITY" }, { status: 503 });
      }
      if (path === "/hang") await new Promise((r) => setTimeout(r, 1_500));
      return new Response(`you sent ${req.headers.get("authorization")}`);
    },
  );
  const svc = {
    base: `http://127.0.0.1:${server.addr.port}`,
    alive: () => true,
    healthy: () => Promise.resolve(true),
    ensureAlive: () => Promise.resolve(),
  } as unknown as ServiceUnderTest;
  const ctx: CaseContext = {
    adminKey: "admin-key-x",
    tenantKey: "tenant-key-x",
    sessionId: "s",
    clientToken: "t",
  };
  const report: RestFuzzReport = {
    ...emptyReport("rest"),
    secretEchoes: 0,
    statuses: {},
    handoffStatuses: {},
    uploadStatuses: {},
  };
  const get = (target: string, headers: [string, string][] = []): RestCase => ({
    kind: "path",
    method: "GET",
    target,
    headers,
    body: new Uint8Array(),
    secrets: [secret],
  });
  try {
    await runCase(svc, get("/500"), ctx, report);
    await runCase(svc, get("/503"), ctx, report);
    assert.equal(report.fivexx, 1, "a 503 for capacity is allowed");
    await runCase(
      svc,
      get("/echo", [["authorization", `Bearer ${secret}`]]),
      ctx,
      report,
    );
    assert.equal(report.secretEchoes, 1);
    await runCase(svc, get("/hang"), ctx, report, 300);
    assert.equal(report.hangs, 1);
    assert.deepEqual(report.statuses, { 200: 1, 500: 1, 503: 1 });
  } finally {
    await server.shutdown();
  }
});
