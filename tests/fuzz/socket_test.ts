import assert from "node:assert/strict";
import { printReport } from "../../fuzz/_lib.ts";
import { runSocketFuzz } from "../../fuzz/socket.ts";

Deno.test("socket fuzzer: a few hundred cases of browser garbage, nothing dies, hangs or answers 5xx; the other tenant keeps streaming", async () => {
  const report = await runSocketFuzz({ cases: 300, seed: 11 });
  printReport(report);
  assert.equal(report.cases, 300);
  assert.deepEqual(
    {
      deaths: report.deaths,
      fivexx: report.fivexx,
      hangs: report.hangs,
      bystanderStreamed: report.bystanderStreamed,
    },
    { deaths: 0, fivexx: 0, hangs: 0, bystanderStreamed: true },
    report.findings.join("\n"),
  );
});
