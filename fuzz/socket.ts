/**
 * The socket fuzzer: browser-side garbage on the media socket of a live session, against
 * the real service in a child process, deterministic by seed. Each case
 * (./socket_cases.ts) is one of: oversize frames, bad JSON, wrong types in every field
 * of every message type, unknown types, odd-length PCM, absurd `audio.config` rates,
 * floods of text/interrupt/ping, takeover storms, abrupt closes, bad tokens, and SFU
 * signalling garbage (hostile SDP answers and ICE candidates, ./sfu_cases.ts). By
 * default it runs against the hosting topology (./_topology.ts): every socket goes
 * through the control plane's relay to a media node with a real Janus, and the fuzz
 * session is `webrtc_sfu`. It counts process deaths (either process), 5xx answers,
 * hangs (a ping not answered, a socket neither opening nor failing, /healthz silent),
 * and whether the bystander tenant's session kept streaming.
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
  mediaUrl,
  mintKey,
  printReport,
  Rng,
  type ServiceUnderTest,
  stopService,
  withBystander,
} from "./_lib.ts";
import { startEcepFake } from "../tests/fakes/ecep_engine_fake.ts";
import { startTopology } from "./_topology.ts";
import { DEADLINE_MS, noteStatus, settle, Sock, type Target } from "./_sock.ts";
import { CASES } from "./socket_cases.ts";

export interface SocketFuzzOptions {
  cases: number;
  seed: number;
  /** A running service; else the topology is started (and stopped) for the run. */
  svc?: ServiceUnderTest;
  /** The fuzz session's transport (default `webrtc_sfu` on the topology it starts). */
  transport?: "websocket_fmp4" | "webrtc_sfu";
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
    if (!options.svc) await stopService(svc, report);
  }
  return report;
}

if (import.meta.main) {
  const cases = Number(Deno.args[0] ?? 10_000);
  const seed = Number(Deno.args[1] ?? 1);
  printReport(await runSocketFuzz({ cases, seed }));
}
