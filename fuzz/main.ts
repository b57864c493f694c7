/**
 * `deno task fuzz [cases] [seed]`: runs the engine, media-socket and REST fuzzers against
 * the real service (child processes; the socket and REST fuzzers against a control
 * plane and a media node, the socket one with a real Janus), 10,000 cases apiece by
 * default, and prints
 * per fuzzer: cases, process deaths, 5xx answers, hangs, and whether another tenant's
 * live session kept streaming throughout. Exits 1 when any count is not zero or the
 * other tenant stalled.
 */
import { type FuzzReport, printReport } from "./_lib.ts";
import { runEngineFuzz } from "./engine.ts";
import { runRestFuzz } from "./rest.ts";
import { runSocketFuzz } from "./socket.ts";

const cases = Number(Deno.args[0] ?? 10_000);
const seed = Number(Deno.args[1] ?? 1);
if (!Number.isInteger(cases) || cases < 1 || !Number.isInteger(seed)) {
  console.error("usage: deno task fuzz [cases ≥ 1] [seed]");
  Deno.exit(2);
}

console.log(`fuzzing with ${cases} cases each, seed ${seed}`);
const reports: FuzzReport[] = [];
for (
  const run of [runEngineFuzz, runSocketFuzz, runRestFuzz] as Array<
    (o: { cases: number; seed: number }) => Promise<FuzzReport>
  >
) {
  const started = performance.now();
  const report = await run({ cases, seed });
  reports.push(report);
  printReport(report);
  console.log(
    `         (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
}
const clean = reports.every((r) =>
  r.deaths === 0 && r.fivexx === 0 && r.hangs === 0 && r.bystanderStreamed
);
console.log(clean ? "fuzz: clean" : "fuzz: FINDINGS");
Deno.exit(clean ? 0 : 1);
