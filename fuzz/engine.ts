/**
 * The engine fuzzer: a fake of each of the four providers (real wss servers speaking
 * their protocols, tests/fakes) that, once a session is active, sends protocol-shaped
 * garbage (`engine_cases.ts`). Each session is created over REST against the running
 * service, gets a browser socket and goes active; then cases run against it, several per
 * session, each followed by a probe: the browser socket answers a ping (or has closed:
 * a flood ends the session) and the session's status read answers, within the deadline.
 * Counted: process deaths, 5xx answers, hangs (a probe or `/healthz` without an answer in
 * time), while another tenant's live session streams throughout.
 *
 *   deno run -A fuzz/engine.ts [cases] [seed]
 */
import { INVALID_FRAME_LIMIT } from "../lib/providers/frames.ts";
import { PROVIDER_TYPES, type ProviderType } from "../lib/ports/providers.ts";
import type { FakePeer } from "../tests/fakes/fake_ws.ts";
import {
  type ProviderKit,
  startProviderKit,
} from "../tests/fakes/providers.ts";
import {
  addFinding,
  emptyReport,
  type FuzzReport,
  mediaUrl,
  mintKey,
  printReport,
  Rng,
  type ServiceUnderTest,
  startService,
  stopService,
  withBystander,
} from "./_lib.ts";
import { CaseSource } from "./engine_cases.ts";

/** Bound on every answer the fuzzer waits for (REST, pong, activation). */
const DEADLINE_MS = 10_000;
/** Cases sent into one session before it is ended and a new one made. */
const CASES_PER_SESSION = 12;
/** The session's status is read after every this many cases (and pongs after each). */
const STATUS_EVERY = 4;

/** The four fakes and the service env that points the vendor endpoints at them. */
export interface EngineFakes {
  kits: ProviderKit[];
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts a fake of each of `types` (every provider by default). */
export function startEngineFakes(
  types: readonly ProviderType[] = PROVIDER_TYPES,
): EngineFakes {
  const kits = types.map((t) => startProviderKit(t));
  return {
    kits,
    env: Object.assign({}, ...kits.map((k) => k.env)),
    close: async () => {
      await Promise.all(kits.map((k) => k.fake.close()));
    },
  };
}

interface Ctx {
  svc: ServiceUnderTest;
  key: string;
  report: FuzzReport;
}

/** `fetch` bounded by the deadline: the response, or null on a hang (counted). */
async function call(
  ctx: Ctx,
  what: string,
  path: string,
  init: RequestInit = {},
): Promise<Response | null> {
  try {
    const res = await fetch(`${ctx.svc.base}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${ctx.key}`,
        "content-type": "application/json",
      },
      signal: AbortSignal.timeout(DEADLINE_MS),
    });
    if (res.status >= 500 && res.status !== 503) {
      ctx.report.fivexx++;
      addFinding(ctx.report, `${what}: HTTP ${res.status}`);
    }
    return res;
  } catch (err) {
    if (!ctx.svc.alive()) return null; // a death, counted by the harness
    ctx.report.hangs++;
    const timedOut = err instanceof DOMException && err.name === "TimeoutError";
    addFinding(
      ctx.report,
      `${what}: ${
        timedOut ? `no answer within ${DEADLINE_MS} ms` : "connection failed"
      }`,
    );
    return null;
  }
}

/** The browser side of a session: state changes, pongs and close, as they arrive. */
class Browser {
  readonly ws: WebSocket;
  status = "";
  closed = false;
  pongs = 0;
  #wake: (() => void)[] = [];

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.ws.onmessage = (e) => {
      if (typeof e.data !== "string") return;
      try {
        const m = JSON.parse(e.data);
        if (m.type === "session.state") this.status = m.status;
        if (m.type === "pong") this.pongs++;
      } catch { /* the service's own frames: not under test here */ }
      this.#notify();
    };
    this.ws.onclose = () => {
      this.closed = true;
      this.#notify();
    };
    this.ws.onerror = () => {};
  }

  #notify(): void {
    for (const w of this.#wake.splice(0)) w();
  }

  /** Resolves true once `check()` holds, false after the deadline. */
  async until(check: () => boolean): Promise<boolean> {
    const end = Date.now() + DEADLINE_MS;
    while (!check()) {
      const left = end - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 250));
        this.#wake.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return true;
  }

  /** A pong, or the socket closed, within the deadline. */
  async probe(): Promise<boolean> {
    if (this.closed) return true;
    const before = this.pongs;
    if (this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify({ type: "ping" }));
    }
    return await this.until(() => this.closed || this.pongs > before);
  }

  close(): void {
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close();
  }
}

/** The engine-side peer of the session just activated. */
function enginePeer(
  kit: ProviderKit,
  before: number,
  sessionId: string,
): FakePeer | undefined {
  if (kit.type === "external_engine") {
    return kit.fake.peers.find((p) =>
      p.json.some((m) =>
        m.type === "session.start" && m.session_id === sessionId
      )
    );
  }
  return kit.fake.peers[before];
}

/** One session against `kit`: create, activate, run up to `budget` cases, end. */
async function runSession(
  ctx: Ctx,
  source: CaseSource,
  kit: ProviderKit,
  budget: number,
): Promise<number> {
  const { report } = ctx;
  const before = kit.fake.peers.length;
  const create = () =>
    call(ctx, `create ${kit.type}`, "/v1/sessions", {
      method: "POST",
      body: JSON.stringify({
        provider_type: kit.type,
        transport: "websocket_fmp4",
        provider_config: { [kit.type]: kit.config },
      }),
    });
  let res = await create();
  // A retryable refusal (rate limit, capacity) is the service doing its job: wait, retry.
  for (let i = 0; i < 5 && (res?.status === 429 || res?.status === 503); i++) {
    await res.body?.cancel();
    const wait = Number(res.headers.get("retry-after") ?? "1");
    await new Promise((r) => setTimeout(r, Math.min(5, wait || 1) * 1000));
    res = await create();
  }
  if (!res) return 0;
  const created = await res.json().catch(() => null);
  if (res.status !== 200 || !created) {
    if (res.status < 500) {
      addFinding(report, `create ${kit.type}: HTTP ${res.status}`);
    }
    return 0;
  }
  const id: string = created.session_id;
  const browser = new Browser(mediaUrl(ctx.svc, id, created.client_token));
  let done = 0;
  try {
    const active = await browser.until(() =>
      browser.status === "active" || browser.closed
    );
    if (!active) {
      report.hangs++;
      addFinding(report, `${kit.type}: session never went active`);
      return 0;
    }
    const peer = enginePeer(kit, before, id);
    if (browser.closed || !peer) {
      addFinding(report, `${kit.type}: session ended before the first case`);
      return 0;
    }
    while (done < budget && !browser.closed) {
      const c = source.next();
      for (const f of c.frames) peer.sendRaw(f);

      done++;
      report.cases++;
      if (!(await browser.probe())) {
        report.hangs++;
        addFinding(report, `${kit.type} ${c.kind}: no pong in time`);
        break;
      }
      if (done % STATUS_EVERY === 0) {
        const status = await call(
          ctx,
          `status after ${c.kind}`,
          `/v1/sessions/${id}`,
        );
        await status?.body?.cancel();
      }
      if (!ctx.svc.alive()) {
        addFinding(report, `${kit.type} ${c.kind}: the service died`);
        break;
      }
    }
  } finally {
    browser.close();
    const end = await call(
      ctx,
      `end ${kit.type}`,
      `/v1/sessions/${id}/end?force=true`,
      { method: "POST" },
    );
    await end?.body?.cancel();
  }
  return done;
}

/**
 * Runs `cases` engine cases (seeded by `seed`) against `svc`, or against a service it
 * starts with the vendor endpoints on its fakes. A given `svc` must have been started
 * with `fakes.env` for the vendor providers to reach the fakes (pass those `fakes`);
 * without them only `external_engine` sessions are fuzzed.
 */
export async function runEngineFuzz(
  opts: {
    cases: number;
    seed: number;
    svc?: ServiceUnderTest;
    fakes?: EngineFakes;
  },
): Promise<FuzzReport> {
  const report = emptyReport("engine");
  const fakes = opts.fakes ??
    startEngineFakes(opts.svc ? ["external_engine"] : PROVIDER_TYPES);
  // The fuzz tenant's own request rate is not under test here.
  const svc = opts.svc ??
    await startService({ ...fakes.env, RATE_LIMIT_PER_MINUTE: "100000" });
  const kits = fakes.kits;
  const rng = new Rng(opts.seed);
  const sources = kits.map((k) =>
    new CaseSource(rng, k, INVALID_FRAME_LIMIT + 5)
  );
  try {
    const ctx: Ctx = {
      svc,
      key: await mintKey(svc, "fuzz-engine"),
      report,
    };
    await withBystander(svc, report, async () => {
      for (let n = 0; report.cases < opts.cases; n++) {
        await svc.ensureAlive();
        const kit = kits[n % kits.length];
        const budget = Math.min(CASES_PER_SESSION, opts.cases - report.cases);
        const ran = await runSession(
          ctx,
          sources[n % kits.length],
          kit,
          budget,
        );
        if (ran === 0) {
          // A session that could not run still counts, so the loop ends.
          report.cases++;
        }
        if (!(await svc.healthy(DEADLINE_MS))) {
          if (svc.alive()) {
            report.hangs++;
            addFinding(report, "/healthz did not answer in time");
          }
        }
      }
    });
  } finally {
    if (!opts.svc) await stopService(svc, report);
    if (!opts.fakes) await fakes.close();
  }
  return report;
}

if (import.meta.main) {
  const cases = Number(Deno.args[0] ?? 10_000);
  const seed = Number(Deno.args[1] ?? 1);
  printReport(await runEngineFuzz({ cases, seed }));
}
