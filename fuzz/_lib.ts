/**
 * The fuzzers' shared harness: a seeded random source, garbage generators and the report
 * each fuzzer fills; and, from ./_service.ts, the service they attack and the bystander.
 */
export * from "./_service.ts";
import { type ServiceUnderTest, STOP_DEADLINE_MS } from "./_service.ts";

/** A small deterministic PRNG (mulberry32): the same seed gives the same cases. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  bool(p = 0.5): boolean {
    return this.next() < p;
  }
  /** A string of up to `maxLen` characters mixing ASCII, controls, and astral/lone surrogates. */
  string(maxLen: number): string {
    const n = this.int(0, maxLen);
    const alphabets = [
      "abcdefghijklmnopqrstuvwxyz0123456789",
      "\u0000\u0001\n\r\t\"'\\/<>{}[]%&;=:?#",
      "\u00e9\u4e2d\u{1f600}\ud800\udfff\u202e\ufeff",
    ];
    let out = "";
    for (let i = 0; i < n; i++) {
      const a = this.pick(alphabets);
      out += [...a][this.int(0, [...a].length - 1)];
    }
    return out;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(0, 255);
    return out;
  }
}

/** A JSON value of a random (usually wrong) type, including the classic `{"toString":0}`. */
export function garbageValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(0, 11)) {
    case 0:
      return { toString: 0 };
    case 1:
      return { valueOf: {}, toJSON: 1 };
    case 2:
      return depth > 2 ? [] : [garbageValue(rng, depth + 1)];
    case 3:
      return rng.pick([0, -1, 1e308, -1e-308, 2 ** 53 + 1, 0.5]);
    case 4:
      return rng.bool();
    case 5:
      return null;
    case 6:
      return rng.string(40);
    case 7:
      return "x".repeat(rng.pick([1024, 70_000, 300_000]));
    case 8:
      return depth > 2 ? {} : { [rng.string(8)]: garbageValue(rng, depth + 1) };
    case 9:
      return "__proto__";
    case 10:
      return { __proto__: { polluted: true } };
    default:
      return "";
  }
}

/** What every fuzzer prints: all zeros and `bystanderStreamed: true` is a pass. */
export interface FuzzReport {
  fuzzer: string;
  cases: number;
  /** Times the service process exited while the fuzzer ran. */
  deaths: number;
  /** 5xx answers other than the retryable 503s the contract allows for capacity. */
  fivexx: number;
  /** Cases the service did not answer within the deadline (or /healthz failed after). */
  hangs: number;
  /** Whether the other tenant's live session kept streaming throughout. */
  bystanderStreamed: boolean;
  /** Short descriptions of the first few findings, for a human. */
  findings: string[];
}

/** A report with nothing counted yet. */
export function emptyReport(fuzzer: string): FuzzReport {
  return {
    fuzzer,
    cases: 0,
    deaths: 0,
    fivexx: 0,
    hangs: 0,
    bystanderStreamed: false,
    findings: [],
  };
}

/** Records a finding (kept to the first 20). */
export function addFinding(report: FuzzReport, text: string): void {
  if (report.findings.length < 20) report.findings.push(text);
}

/**
 * Stops `svc` after a run: a process that does not exit within `deadlineMs` of SIGTERM
 * is killed and counted on `report` as a hang (a shutdown that never ends is a finding).
 */
export async function stopService(
  svc: ServiceUnderTest,
  report: FuzzReport,
  deadlineMs = STOP_DEADLINE_MS,
): Promise<void> {
  for (const name of await svc.stop(deadlineMs)) {
    report.hangs++;
    addFinding(
      report,
      `${name} did not exit within ${deadlineMs / 1000} s of SIGTERM (killed)`,
    );
  }
}

/** One line per fuzzer, then its findings. */
export function printReport(r: FuzzReport): void {
  console.log(
    `${
      r.fuzzer.padEnd(8)
    } cases ${r.cases}  process deaths ${r.deaths}  5xx ${r.fivexx}  hangs ${r.hangs}  other tenant kept streaming: ${
      r.bystanderStreamed ? "yes" : "no"
    }`,
  );
  for (const f of r.findings) console.log(`  - ${f}`);
}

/**
 * Asserts that a run was clean: `cases` ran, and no death, 5xx or hang, and the other
 * tenant kept streaming (the findings are the failure message).
 */
export function assertClean(report: FuzzReport, cases: number): void {
  printReport(report);
  if (report.cases !== cases) {
    throw new Error(`${report.fuzzer}: ran ${report.cases} of ${cases} cases`);
  }
  const got = {
    deaths: report.deaths,
    fivexx: report.fivexx,
    hangs: report.hangs,
    bystanderStreamed: report.bystanderStreamed,
  };
  const want = { deaths: 0, fivexx: 0, hangs: 0, bystanderStreamed: true };
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(
      `${report.fuzzer}: ${JSON.stringify(got)}\n${report.findings.join("\n")}`,
    );
  }
}
