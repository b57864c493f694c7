/**
 * The socket fuzzer's cases (./socket.ts runs them): oversize frames, bad JSON, wrong
 * types in every field of every message type, unknown types, odd-length PCM, absurd
 * `audio.config` rates, floods, takeover storms, abrupt closes, bad tokens, and SFU
 * signalling garbage (./sfu_cases.ts). Deterministic: the same `Rng` state, the same
 * bytes.
 */
import {
  addFinding,
  type FuzzReport,
  garbageValue,
  mediaUrl,
  type Rng,
  type ServiceUnderTest,
} from "./_lib.ts";
import { sfuSignal } from "./sfu_cases.ts";
import { DEADLINE_MS, noteStatus, settle, Sock, type Target } from "./_sock.ts";

const FRAME_LIMIT = 64 * 1024;

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

export const CASES: Record<string, Case> = {
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
