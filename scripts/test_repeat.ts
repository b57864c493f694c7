/**
 * `deno task test:repeat N [-- deno test args]`: runs the whole suite N times, one run
 * after the other (as `deno task test` runs it), and prints each failing test's count,
 * then one line per run and a closing `N passed, N failed` over the runs. Each run's
 * JUnit report and output go to test-output/repeat/ for the failures' details.
 *
 *   deno task test:repeat 20
 *   deno task test:repeat 5 -- tests/e2e/     (a folder or file instead of tests/)
 */
const args = [...Deno.args];
const sep = args.indexOf("--");
const rest = sep >= 0 ? args.splice(sep).slice(1) : [];
const runs = Number(args[0] ?? 5);
if (!Number.isInteger(runs) || runs < 1 || runs > 200) {
  console.error("usage: deno task test:repeat N [-- paths]  (N from 1 to 200)");
  Deno.exit(2);
}
/**
 * Test files the whole suite runs alone, after the rest (as deno.json's `test` task):
 * WebKitGTK's audio output lost what its page played while the suite's other files
 * starved the browser (docs/notes/performance-history.md).
 */
const ALONE = ["tests/e2e/matrix_webkit_test.ts"];
/** The runs of one pass: the given paths, or the suite in its two phases. */
const phases = rest.length > 0 ? [["--parallel", ...rest]] : [
  ["--parallel", ...ALONE.map((f) => `--ignore=${f}`), "tests/"],
  ALONE,
];
const out = new URL("../test-output/repeat/", import.meta.url);
await Deno.mkdir(out, { recursive: true });

/** Failed test names (file › test › step) in a JUnit report. */
export function failedTests(xml: string): string[] {
  const failed: string[] = [];
  const re =
    /<testcase\b[^>]*\bname="([^"]*)"[^>]*\bclassname="([^"]*)"[^>]*>([\s\S]*?)<\/testcase>/g;
  for (const m of xml.matchAll(re)) {
    if (/<failure\b/.test(m[3])) {
      failed.push(`${unescape(m[2])} › ${unescape(m[1])}`);
    }
  }
  return failed;
}

function unescape(s: string): string {
  return s.replaceAll("&quot;", '"').replaceAll("&apos;", "'")
    .replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

const counts = new Map<string, number>();
let green = 0;
const lines: string[] = [];
for (let i = 1; i <= runs; i++) {
  const started = performance.now();
  let failed: string[] = [];
  for (const [k, phase] of phases.entries()) {
    const name = `run-${i}${k === 0 ? "" : `-${k}`}`;
    const junit = new URL(`${name}.xml`, out).pathname;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["test", "-A", `--junit-path=${junit}`, ...phase],
      env: { DENO_CERT: "tests/fixtures/tls/ca.crt" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const file = (ext: string) =>
      Deno.open(new URL(`${name}.${ext}`, out), {
        write: true,
        create: true,
        truncate: true,
      });
    await Promise.all([
      child.stdout.pipeTo((await file("log")).writable),
      child.stderr.pipeTo((await file("err")).writable),
    ]);
    const status = await child.status;
    let these: string[] = [];
    try {
      these = failedTests(await Deno.readTextFile(junit));
    } catch {
      these = ["(no JUnit report: the run died)"];
    }
    if (!status.success && these.length === 0) {
      these = ["(exit without a failed test)"];
    }
    failed = [...failed, ...these];
  }
  for (const f of failed) counts.set(f, (counts.get(f) ?? 0) + 1);
  if (failed.length === 0) green++;
  const secs = Math.round((performance.now() - started) / 1000);
  const line = `run ${i}/${runs}: ${
    failed.length === 0 ? "green" : `${failed.length} failed`
  } (${secs} s)`;
  lines.push(line);
  console.log(line);
}
console.log("\nfailures by test (of %d runs):", runs);
if (counts.size === 0) console.log("  none");
for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1])) {
  console.log(`  ${n}× ${name}`);
}
console.log(`\nruns: ${green} passed, ${runs - green} failed`);
Deno.exit(green === runs ? 0 : 1);
