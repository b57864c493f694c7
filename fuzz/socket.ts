/**
 * The socket fuzzer: browser-side garbage on the media socket of a live session, against
 * the real service in a child process, deterministic by seed. Each case is one of:
 * oversize frames, bad JSON, wrong types in every field of every message type, unknown
 * types, odd-length PCM, absurd `audio.config` rates, floods of text/interrupt/ping,
 * takeover storms, abrupt closes, bad tokens, and SFU signalling garbage (hostile SDP
 * answers and ICE candidates, ./sfu_cases.ts). By default it runs against the hosting
 * topology (./_topology.ts): every socket goes through the control plane's relay to a
 * media node with a real Janus, and the fuzz session is `webrtc_sfu`. It counts process
 * deaths (either process), 5xx answers, hangs (a ping not answered, a socket neither
 * opening nor failing, /healthz silent), and whether the bystander tenant's session
 * kept streaming.
 *
 * `deno run -A fuzz/socket.ts [cases] [seed]` prints the report.
 */
import {
  addFinding,
  createSession,
  ecepCreateBody,
  emptyReport,
  FUZZ_ENGINE_KEY,
  type FuzzReport,
  garbageValue,
  mediaUrl,
  mintKey,
  printReport,
  Rng,
  type ServiceUnderTest,
  withBystander,
} from "./_lib.ts";
import { startEcepFake } from "../tests/fakes/ecep_engine_fake.ts";
import { sfuSignal } from "./sfu_cases.ts";
import { startTopology } from "./_topology.ts";

export interface SocketFuzzOptions {
  cases: number;
  seed: number;
  /** A running service; else the topology is started (and stopped) for the run. */
  svc?: ServiceUnderTest;
  /** The fuzz session's transport (default `webrtc_sfu` on the topology it starts). */
  transport?: "websocket_fmp4" | "webrtc_sfu";
}

/** How long anything the fuzzer waits for may take before it counts as a hang. */
const DEADLINE_MS = 5000;
const FRAME_LIMIT = 64 * 1024;

/** A browser socket the fuzzer drives. */
class Sock {
  readonly ws: WebSocket;
  readonly opened: Promise<boolean>;
  closed = false;
  pongs = 0;
  ended = false;
  #wake: Array<() => void> = [];

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve) => {
      this.ws.onopen = () => resolve(true);
      this.ws.onerror = () => resolve(false);
      this.ws.onclose = () => {
        this.closed = true;
        resolve(false);
        this.#notify();
      };
    });
    this.ws.onmessage = (e) => {
      if (typeof e.data !== "string") return;
      try {
        const m = JSON.parse(e.data);
        if (m.type === "pong") this.pongs++;
        if (
          m.type === "session.ended" ||
          (m.type === "error" && m.code === "invalid_session")
        ) this.ended = true;
      } catch { /* the fuzzer judges liveness, not content */ }
      this.#notify();
    };
  }

  #notify(): void {
    for (const w of this.#wake.splice(0)) w();
  }

  get open(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  send(data: string | Uint8Array): void {
    try {
      if (this.open) this.ws.send(data);
    } catch { /* closed under us: the next case reconnects */ }
  }

  /** Resolves true once `cond` holds, false after `ms` or when the socket closes. */
  async until(cond: () => boolean, ms = DEADLINE_MS): Promise<boolean> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (this.closed || Date.now() > end) return cond();
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(1, end - Date.now()));
        this.#wake.push(() => (clearTimeout(t), r()));
      });
    }
    return true;
  }

  close(code?: number): void {
    try {
      this.ws.close(code);
    } catch { /* already closing */ }
  }
}

/** The fuzz tenant's live session and its current socket. */
interface Target {
  key: string;
  engineUrl: string;
  sessionId: string;
  token: string;
  sock: Sock | null;
  transport: "websocket_fmp4" | "webrtc_sfu";
}

/** Waits for a socket to open or fail; a socket doing neither in time is a hang. */
async function settle(s: Sock, report: FuzzReport, what: string) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    s.opened,
    new Promise<"hang">((res) =>
      timer = setTimeout(() => res("hang"), DEADLINE_MS)
    ),
  ]);
  clearTimeout(timer);
  if (r === "hang") {
    report.hangs++;
    addFinding(report, `${what}: socket neither opened nor failed`);
    return false;
  }
  return r;
}

/** Counts a 5xx (other than 503) as a finding. */
async function noteStatus(res: Response, report: FuzzReport, what: string) {
  await res.body?.cancel().catch(() => {});
  if (res.status >= 500 && res.status !== 503) {
    report.fivexx++;
    addFinding(report, `${what}: HTTP ${res.status}`);
  }
}

/** Ends the target's session (force) and creates a fresh one with a socket open. */
async function renew(svc: ServiceUnderTest, t: Target, report: FuzzReport) {
  t.sock?.close();
  t.sock = null;
  if (t.sessionId) {
    const res = await fetch(
      `${svc.base}/v1/sessions/${
        encodeURIComponent(t.sessionId)
      }/end?force=true`,
      { method: "POST", headers: { authorization: `Bearer ${t.key}` } },
    ).catch(() => null);
    if (res) await noteStatus(res, report, "end");
  }
  const created = await createSession(svc, t.key, {
    ...ecepCreateBody(t.engineUrl),
    transport: t.transport,
  });
  t.sessionId = created.session_id;
  t.token = created.client_token;
  await connect(svc, t, report);
}

async function connect(svc: ServiceUnderTest, t: Target, report: FuzzReport) {
  const s = new Sock(mediaUrl(svc, t.sessionId, t.token));
  t.sock = (await settle(s, report, "connect")) ? s : null;
}

/** A message of a known type with one field (or the type) replaced by garbage. */
function wrongTypes(rng: Rng): unknown {
  const shapes: Record<string, unknown>[] = [
    { type: "audio.config", sample_rate: 24000 },
    { type: "text", text: "hello" },
    { type: "interrupt" },
    { type: "ping" },
  ];
  const msg: Record<string, unknown> = { ...rng.pick(shapes) };
  const fields = Object.keys(msg);
  msg[rng.pick(fields)] = garbageValue(rng);
  if (rng.bool(0.3)) msg[rng.string(6)] = garbageValue(rng);
  return msg;
}

type Case = (
  rng: Rng,
  svc: ServiceUnderTest,
  t: Target,
  report: FuzzReport,
) => Promise<void>;

const CASES: Record<string, Case> = {
  oversize: (rng, _svc, t) => {
    const n = FRAME_LIMIT + rng.int(1, 1024 * 1024);
    for (let i = rng.int(1, 3); i > 0; i--) {
      t.sock!.send(rng.bool() ? new Uint8Array(n) : "x".repeat(n));
    }
    return Promise.resolve();
  },
  sfuAnswer: (rng, _svc, t) => {
    for (let i = rng.int(1, 3); i > 0; i--) t.sock!.send(sfuSignal(rng, true));
    return Promise.resolve();
  },
  sfuCandidate: (rng, _svc, t) => {
    for (let i = rng.int(1, 8); i > 0; i--) t.sock!.send(sfuSignal(rng, false));
    return Promise.resolve();
  },
  badJson: (rng, _svc, t) => {
    t.sock!.send(
      rng.bool() ? rng.string(200) : `{"type":"text","text":${rng.string(20)}`,
    );
    return Promise.resolve();
  },
  wrongTypes: (rng, _svc, t) => {
    t.sock!.send(JSON.stringify(wrongTypes(rng)));
    return Promise.resolve();
  },
  unknownType: (rng, _svc, t) => {
    t.sock!.send(
      JSON.stringify({ type: rng.string(12), x: garbageValue(rng) }),
    );
    return Promise.resolve();
  },
  oddPcm: (rng, _svc, t) => {
    t.sock!.send(rng.bytes(rng.int(0, 400) * 2 + 1));
    return Promise.resolve();
  },
  absurdRate: (rng, _svc, t) => {
    const rate = rng.pick([0, -1, 1, 7999, 48001, 1e9, 44100.5, 2 ** 53 + 1]);
    t.sock!.send(JSON.stringify({ type: "audio.config", sample_rate: rate }));
    t.sock!.send(rng.bytes(rng.int(1, 2000) * 2));
    return Promise.resolve();
  },
  audio: (rng, _svc, t) => {
    t.sock!.send(
      JSON.stringify({
        type: "audio.config",
        sample_rate: rng.pick([8000, 16000, 24000, 48000]),
      }),
    );
    for (let i = rng.int(1, 20); i > 0; i--) {
      t.sock!.send(rng.bytes(rng.int(1, 4000) * 2));
    }
    return Promise.resolve();
  },
  flood: (rng, _svc, t) => {
    const msgs = [
      { type: "ping" },
      { type: "interrupt" },
      { type: "text", text: rng.string(50) || "x" },
    ];
    for (let i = rng.int(50, 400); i > 0; i--) {
      t.sock!.send(JSON.stringify(rng.pick(msgs)));
    }
    return Promise.resolve();
  },
  takeoverStorm: async (rng, svc, t, report) => {
    const socks = Array.from(
      { length: rng.int(2, 8) },
      () => new Sock(mediaUrl(svc, t.sessionId, t.token)),
    );
    const results = await Promise.all(
      socks.map((s) => settle(s, report, "takeover")),
    );
    // The newest socket that opened is the session's now; close the rest.
    const winner = socks.findLast((s, i) => results[i] && s.open) ?? null;
    for (const s of socks) if (s !== winner) s.close();
    if (winner) {
      t.sock?.close();
      t.sock = winner;
    }
  },
  abruptClose: async (rng, svc, t, report) => {
    const s = new Sock(mediaUrl(svc, t.sessionId, t.token));
    if (rng.bool()) {
      s.close();
      return;
    }
    if (await settle(s, report, "abrupt")) {
      s.send(rng.bytes(rng.int(0, 64) * 2));
      s.close(rng.pick([1000, 3000, 4999, undefined]));
    }
    // This socket took the session over and is gone: the next case reconnects.
    t.sock?.close();
    t.sock = null;
  },
  badToken: async (rng, svc, t, report) => {
    const id = rng.bool()
      ? t.sessionId
      : rng.pick(["", "x", "session:0", rng.string(30)]);
    const token = rng.pick([
      "",
      rng.string(40),
      t.token.slice(0, -3) + "AAA",
      "a".repeat(5000),
      t.token + "%00",
    ]);
    const url = `${svc.base}/v1/sessions/${encodeURIComponent(id)}/ws?token=${
      encodeURIComponent(token)
    }`;
    const res = await fetch(url, {
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
      signal: AbortSignal.timeout(DEADLINE_MS),
    }).catch((err) => err);
    if (res instanceof Response) await noteStatus(res, report, "bad token");
    else if (res instanceof DOMException && res.name === "TimeoutError") {
      report.hangs++;
      addFinding(report, "bad token: no answer");
    }
  },
};

/** After a case: the socket (if open) answers a ping, else the service its /healthz. */
async function check(
  svc: ServiceUnderTest,
  t: Target,
  report: FuzzReport,
  what: string,
) {
  const s = t.sock;
  if (s?.open && !s.ended) {
    const before = s.pongs;
    // A flood may have spent this socket's text budget: wait for it to refill a little.
    await new Promise((r) => setTimeout(r, 60));
    s.send(JSON.stringify({ type: "ping" }));
    const ok = await s.until(() => s.pongs > before || !s.open);
    if (!ok && s.open) {
      // One retry: the ping may have been throttled after a flood.
      await new Promise((r) => setTimeout(r, 1000));
      s.send(JSON.stringify({ type: "ping" }));
      if (!await s.until(() => s.pongs > before || !s.open)) {
        report.hangs++;
        addFinding(report, `${what}: ping not answered`);
      }
    }
  } else if (svc.alive() && !await svc.healthy(DEADLINE_MS)) {
    report.hangs++;
    addFinding(report, `${what}: /healthz did not answer`);
  }
}

/** Runs `cases` socket-fuzz cases seeded by `seed`; see the module doc. */
export async function runSocketFuzz(
  options: SocketFuzzOptions,
): Promise<FuzzReport> {
  const report = emptyReport("socket");
  const svc = options.svc ??
    await startTopology({ janus: true, nodeEnv: { RENDER_MAX_SESSIONS: "8" } });
  const transport = options.transport ??
    (options.svc ? "websocket_fmp4" : "webrtc_sfu");
  const engine = startEcepFake({ key: FUZZ_ENGINE_KEY });
  const rng = new Rng(options.seed);
  const names = Object.keys(CASES);
  try {
    const key = await mintKey(svc, `fuzz-socket-${options.seed}`);
    const t: Target = {
      key,
      engineUrl: engine.url,
      sessionId: "",
      token: "",
      sock: null,
      transport,
    };
    await withBystander(svc, report, async () => {
      await renew(svc, t, report);
      for (let i = 0; i < options.cases; i++) {
        const name = rng.pick(names);
        if (!svc.alive()) await svc.ensureAlive();
        if (!t.sock?.open || t.sock.ended) {
          if (!t.sock?.ended) await connect(svc, t, report);
          if (!t.sock?.open) await renew(svc, t, report).catch(() => {});
        }
        if (t.sock?.open) {
          try {
            await CASES[name](rng, svc, t, report);
          } catch (err) {
            addFinding(
              report,
              `case ${name} threw: ${err instanceof Error ? err.message : "?"}`,
            );
          }
        }
        report.cases++;
        await check(svc, t, report, `case ${i} (${name})`);
      }
      t.sock?.close();
    });
  } finally {
    await engine.close();
    if (!options.svc) await svc.stop();
  }
  return report;
}

if (import.meta.main) {
  const cases = Number(Deno.args[0] ?? 10_000);
  const seed = Number(Deno.args[1] ?? 1);
  printReport(await runSocketFuzz({ cases, seed }));
}
