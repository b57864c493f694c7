/**
 * The REST fuzzer (issue 11): garbage bodies, hostile headers and odd paths, every
 * route with every method, sent as raw HTTP/1.1 to the real service while another
 * tenant's session streams. By default the service is the hosting topology
 * (./_topology.ts: a control plane and a media node in their own processes): the cases
 * go to the control plane, and every fifth is a handoff attack on the node's
 * `/internal/v1/sessions` (./handoff_cases.ts); one in ten is a hostile photo upload
 * from a signed-in console (./upload_cases.ts: decompression bombs, scan bombs). Counts process deaths, 5xx answers (a 503
 * for capacity excepted: the contract allows it), hangs, and answers that echo a
 * secret the case submitted. Deterministic by seed.
 *
 * `deno run -A fuzz/rest.ts [cases] [seed]` runs it on its own.
 */
import {
  addFinding,
  createSession,
  emptyReport,
  type FuzzReport,
  mintKey,
  printReport,
  Rng,
  type ServiceUnderTest,
  stopService,
  withBystander,
} from "./_lib.ts";
import { HandoffCases } from "./handoff_cases.ts";
import { signInConsole, uploadCase } from "./upload_cases.ts";
import { FUZZ_NODE_SECRET, startTopology } from "./_topology.ts";
import {
  bodyCase,
  type CaseContext,
  headerCase,
  matrixCase,
  pathCase,
  type RestCase,
} from "./rest_cases.ts";

/** How long one case may take to be answered before it counts as a hang. */
export const CASE_DEADLINE_MS = 8_000;
/** The 5xx codes the contract allows under load: capacity, retryable. */
const CAPACITY_CODES = new Set(["AVTR_RENDER_CAPACITY", "AVTR_SFU_ROOM_FULL"]);
/** Answers are read up to this many bytes. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** The REST fuzzer's report: the shared figures, and answers that echoed a secret. */
export interface RestFuzzReport extends FuzzReport {
  /** Answers whose head or body held a credential or secret the case submitted. */
  secretEchoes: number;
  /** Answers by status (0: the server closed without one), for a human to judge coverage. */
  statuses: Record<number, number>;
  /** The same for the handoff cases alone (the media node's answers). */
  handoffStatuses: Record<number, number>;
  /** The same for the photo upload cases alone. */
  uploadStatuses: Record<number, number>;
}

export interface RestFuzzOptions {
  cases: number;
  seed: number;
  /** A running service; one is started (and stopped) when omitted. */
  svc?: ServiceUnderTest;
}

/** One answer on the wire: status, header block and body text. */
export interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** Latin-1 bytes of `s` (every code unit below 0x100 is one byte, as on the wire). */
function latin1(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

/** The bytes of `c` as a request, with `Connection: close` and its length. */
export function requestBytes(c: RestCase, host: string): Uint8Array {
  let head = `${c.method} ${c.target} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [k, v] of c.headers) head += `${k}: ${v}\r\n`;
  if (!c.ownLength && c.body.length > 0) {
    head += `content-length: ${c.body.length}\r\n`;
  }
  head += "connection: close\r\n\r\n";
  const h = latin1(head);
  const out = new Uint8Array(h.length + c.body.length);
  out.set(h);
  out.set(c.body, h.length);
  return out;
}

function indexOf(hay: Uint8Array, needle: number[], from = 0): number {
  outer: for (let i = from; i <= hay.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (hay[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}

const CRLF2 = [13, 10, 13, 10];

/** Whether `buf` holds a whole answer to a request with `method`. */
function complete(buf: Uint8Array, method: string): boolean {
  const end = indexOf(buf, CRLF2);
  if (end < 0) return false;
  const head = new TextDecoder().decode(buf.subarray(0, end)).toLowerCase();
  const status = Number(head.slice(9, 12));
  if (status === 101 || status === 204 || status === 304 || method === "HEAD") {
    return true;
  }
  const length = head.match(/\r\ncontent-length:\s*(\d+)/)?.[1];
  if (length !== undefined) return buf.length - end - 4 >= Number(length);
  if (/\r\ntransfer-encoding:\s*chunked/.test(head)) {
    return indexOf(buf, [48, 13, 10, 13, 10], end) >= 0;
  }
  return false;
}

/** Removes chunk framing from a chunked body (close enough for a substring search). */
function dechunk(body: string): string {
  return body.replace(/(^|\r\n)[0-9a-fA-F]+\r\n/g, "");
}

/**
 * Sends `c` on a fresh connection and reads the answer: null when the server closed
 * without one, "hang" when none came within `deadlineMs`.
 */
export async function send(
  port: number,
  c: RestCase,
  deadlineMs = CASE_DEADLINE_MS,
): Promise<RawAnswer | null | "hang"> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"hang">((r) => {
    timer = setTimeout(() => r("hang"), deadlineMs);
  });
  try {
    // The server may answer (413, 431) and close before all is written: not an error.
    const bytes = requestBytes(c, `127.0.0.1:${port}`);
    // A stalled case leaves the rest of its body unsent (the connection stays open).
    const all = c.stall === undefined
      ? bytes
      : bytes.subarray(0, bytes.length - c.body.length + c.stall);
    const writing = (async () => {
      let off = 0;
      while (off < all.length) off += await conn.write(all.subarray(off));
    })().catch(() => {});
    let buf = new Uint8Array(0);
    const chunk = new Uint8Array(64 * 1024);
    while (!complete(buf, c.method) && buf.length < MAX_ANSWER_BYTES) {
      const n = await Promise.race([
        conn.read(chunk).catch(() => null),
        deadline,
      ]);
      if (n === "hang") return "hang";
      if (n === null) break;
      const next = new Uint8Array(buf.length + n);
      next.set(buf);
      next.set(chunk.subarray(0, n), buf.length);
      buf = next;
    }
    await Promise.race([writing, deadline]);
    if (buf.length === 0) return null;
    const text = new TextDecoder().decode(buf);
    const end = text.indexOf("\r\n\r\n");
    const head = end < 0 ? text : text.slice(0, end);
    const body = end < 0 ? "" : text.slice(end + 4);
    return {
      status: Number(head.slice(9, 12)) || 0,
      head,
      body: /\r\ntransfer-encoding:\s*chunked/i.test(head)
        ? dechunk(body)
        : body,
    };
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

/** A short description of a case for a finding. */
function describe(c: RestCase): string {
  const plain = c.target.replace(/token=[^&]*/g, "token=…");
  const target = plain.length > 80 ? plain.slice(0, 80) + "…" : plain;
  return `${c.kind} ${c.method.slice(0, 10)} ${JSON.stringify(target)}`;
}

/** The `code` of an error answer, when its body is one. */
function codeOf(body: string): string | undefined {
  try {
    const v = JSON.parse(body);
    return typeof v?.code === "string" ? v.code : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The case of index `i`: bodies, headers, paths and the route × method matrix in turn,
 * photo uploads, and on a topology, handoff attacks on the node.
 */
function caseOf(
  rng: Rng,
  ctx: CaseContext,
  i: number,
  handoffs: HandoffCases,
): RestCase {
  if (ctx.node && i % 5 === 4) return handoffs.next(rng, ctx.node);
  if (ctx.console && i % 10 === 7) return uploadCase(rng, ctx.console);
  switch (i % 4) {
    case 0:
      return bodyCase(rng, ctx);
    case 1:
      return headerCase(rng, ctx);
    case 2:
      return pathCase(rng, ctx);
    default:
      return matrixCase(rng, ctx, Math.floor(i / 4));
  }
}

/** Runs `cases` REST cases from `seed` against `svc` (started here when omitted). */
export async function runRestFuzz(
  options: RestFuzzOptions,
): Promise<RestFuzzReport> {
  const own = options.svc === undefined;
  // A high limit, so the cases reach the routes rather than 429; the node keeps the
  // default, so failed handoffs spend its address window while signed ones still pass.
  const topo = own
    ? await startTopology({
      env: { RATE_LIMIT_PER_MINUTE: "100000000" },
      nodeEnv: {
        RATE_LIMIT_PER_MINUTE: "600",
        REQUEST_BODY_TIMEOUT_MS: "1000",
      },
    })
    : null;
  const svc = options.svc ?? topo!;
  const report: RestFuzzReport = {
    ...emptyReport("rest"),
    secretEchoes: 0,
    statuses: {},
    handoffStatuses: {},
    uploadStatuses: {},
  };
  try {
    const tenantKey = await mintKey(svc, "fuzz-rest");
    const session = await createSession(svc, tenantKey, {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://engine.fuzz.invalid/v1",
          auth_headers: { "x-engine-key": "fuzz" },
        },
      },
    });
    const ctx: CaseContext = {
      adminKey: svc.adminKey,
      tenantKey,
      sessionId: session.session_id,
      clientToken: session.client_token,
      console: await signInConsole(svc.base, svc.adminKey, "fuzz-upload"),
    };
    const rng = new Rng(options.seed);
    const handoffs = new HandoffCases();
    let deaths = svc.deaths;
    const nodeTarget = async () =>
      topo
        ? {
          base: topo.node.base,
          id: await topo.nodeId(),
          secret: new TextEncoder().encode(FUZZ_NODE_SECRET),
        }
        : undefined;
    ctx.node = await nodeTarget();
    await withBystander(svc, report, async () => {
      for (let i = 0; i < options.cases; i++) {
        // A restarted node has a new id: handoffs are signed for the one running.
        if (svc.deaths !== deaths) {
          deaths = svc.deaths;
          ctx.node = await nodeTarget();
        }
        const c = caseOf(rng, ctx, i, handoffs);
        await runCase(svc, c, ctx, report);
        report.cases++;
      }
    });
  } finally {
    if (own) await stopService(svc, report);
  }
  return report;
}

/** Sends one case and counts what its answer shows (exported for the fuzzer's own test). */
export async function runCase(
  svc: ServiceUnderTest,
  c: RestCase,
  ctx: CaseContext,
  report: RestFuzzReport,
  deadlineMs = CASE_DEADLINE_MS,
): Promise<void> {
  const base = c.to === "node" && ctx.node ? ctx.node.base : svc.base;
  const port = Number(new URL(base).port);
  let answer: RawAnswer | null | "hang";
  try {
    answer = await send(port, c, deadlineMs);
  } catch (err) {
    answer = null;
    if (!svc.alive()) addFinding(report, `${describe(c)}: ${String(err)}`);
  }
  if (answer === "hang") {
    report.hangs++;
    addFinding(report, `${describe(c)}: no answer in ${deadlineMs} ms`);
  } else {
    const status = answer?.status ?? 0;
    report.statuses[status] = (report.statuses[status] ?? 0) + 1;
    if (c.kind === "handoff") {
      report.handoffStatuses[status] = (report.handoffStatuses[status] ?? 0) +
        1;
    }
    if (c.kind === "upload") {
      report.uploadStatuses[status] = (report.uploadStatuses[status] ?? 0) + 1;
    }
  }
  if (answer !== null && answer !== "hang") {
    const code = codeOf(answer.body);
    if (
      answer.status >= 500 &&
      !(answer.status === 503 && CAPACITY_CODES.has(code ?? ""))
    ) {
      report.fivexx++;
      addFinding(report, `${describe(c)}: ${answer.status} ${code ?? ""}`);
    }
    for (const s of [...c.secrets, ctx.adminKey, ctx.tenantKey]) {
      if (answer.body.includes(s) || answer.head.includes(s)) {
        report.secretEchoes++;
        const where = answer.head.includes(s) ? answer.head : answer.body;
        const at = where.indexOf(s);
        addFinding(
          report,
          `${describe(c)}: the answer echoes a submitted secret: ${
            JSON.stringify(where.slice(Math.max(0, at - 60), at + 10))
          }`,
        );
        break;
      }
    }
  }
  if (!svc.alive()) {
    addFinding(report, `${describe(c)}: the process died`);
    await svc.ensureAlive();
  } else if (answer === "hang" && !(await svc.healthy())) {
    addFinding(report, `${describe(c)}: /healthz failed after a hang`);
  }
}

if (import.meta.main) {
  const cases = Number(Deno.args[0] ?? 10_000);
  const seed = Number(Deno.args[1] ?? 1);
  const report = await runRestFuzz({ cases, seed });
  printReport(report);
  console.log(
    `         answers echoing a submitted secret: ${report.secretEchoes}; by status: ${
      JSON.stringify(report.statuses)
    }; the node's to handoffs: ${
      JSON.stringify(report.handoffStatuses)
    }; to uploads: ${JSON.stringify(report.uploadStatuses)}`,
  );
}
