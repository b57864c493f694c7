/**
 * SFU signalling garbage for the socket fuzzer (issue 22): `webrtc.answer` and
 * `webrtc.candidate` messages a hostile browser might send on a `webrtc_sfu` session's
 * media socket: SDP that is random, truncated, huge, or well formed but naming internal
 * addresses, and candidates naming loopback, private, link-local and metadata
 * addresses, hostnames, absurd ports and fields of the wrong type.
 */
import { garbageValue, type Rng } from "./_lib.ts";

const HOSTILE_ADDRESSES = [
  "127.0.0.1",
  "10.0.0.1",
  "192.168.1.1",
  "172.16.0.1",
  "169.254.169.254",
  "100.64.0.1",
  "0.0.0.0",
  "::1",
  "fe80::1",
  "fd00::1",
  "::ffff:127.0.0.1",
  // Leading zeros: octal to getaddrinfo, so to Janus (10.0.0.1, 172.16.0.1, 127.0.0.8).
  "012.0.0.1",
  "172.020.0.1",
  "127.0.0.010",
  "fe80::1%eth0",
  "metadata.google.internal",
  "localhost",
  "8.8.8.8",
  "6f1c7a0e-1c2b-4c7e-9a55-1b2c3d4e5f60.local",
];

/** One candidate line, usually well formed, naming a hostile address. */
export function candidateLine(rng: Rng): string {
  if (rng.bool(0.15)) return rng.string(120);
  const addr = rng.pick(HOSTILE_ADDRESSES);
  const port = rng.pick([0, 1, 9, 22, 3478, 8088, 21000, 21001, 65535, 70000]);
  const transport = rng.pick(["udp", "tcp", "UDP", "xyz"]);
  const type = rng.pick(["host", "srflx", "relay", "prflx", "bogus"]);
  const extra = rng.pick([
    "",
    " raddr 10.0.0.1 rport 9",
    " tcptype active",
    " generation 0 ufrag abcd",
    ` ${rng.string(30)}`,
  ]);
  return `candidate:${rng.int(0, 2 ** 32)} ${rng.int(1, 2)} ${transport} ${
    rng.int(0, 2 ** 31)
  } ${addr} ${port} typ ${type}${extra}`;
}

/** Lines a hostile answer adds to a media section: floods, odd ids, huge values. */
function hostileMediaLines(rng: Rng): string[] {
  const n = rng.int(1, 3_000);
  return rng.pick([
    () => [
      `a=ssrc-group:FID ${Array.from({ length: n }, (_, i) => i).join(" ")}`,
    ],
    () => [`a=extmap:${rng.pick([0, 15, 256, 2 ** 33])} urn:${rng.string(20)}`],
    () => [`a=fmtp:96 ${"k=v;".repeat(n)}`],
    () => ["a=rtpmap:96", `a=rtpmap:${rng.pick([-1, 2 ** 32])} x/y/z`],
    () =>
      Array.from({ length: Math.min(n, 300) }, (_, i) => `a=rid:r${i} recv`),
    () => [`a=mid:${"m".repeat(n)}`, "a=msid:", "a=ssrc:", "a=ssrc:1 msid:"],
    () => Array(n).fill("a=rtcp-fb:* nack pli"),
    () => ["a=setup:holdconn", "a=sendrecv", "a=inactive", "a=ice-lite"],
  ])();
}

/** An SDP answer: random, truncated, oversized or well formed with hostile candidates. */
function answerSdp(rng: Rng): unknown {
  switch (rng.int(0, 6)) {
    case 0:
      return rng.string(400) || "x";
    case 1:
      return "v=0\r\n".repeat(rng.int(1, 4000));
    case 2:
      return garbageValue(rng);
    default: {
      const lines = [
        "v=0",
        "o=- 1 1 IN IP4 0.0.0.0",
        "s=-",
        "t=0 0",
        "a=group:BUNDLE v a",
        `a=ice-ufrag:${rng.string(8) || "u"}`,
        "a=ice-pwd:0123456789abcdefghijklmn",
        `a=fingerprint:sha-256 ${Array(32).fill("AB").join(":")}`,
        "a=setup:active",
      ];
      for (const [kind, pt, mid] of [["video", 96, "v"], ["audio", 111, "a"]]) {
        lines.push(
          `m=${kind} ${rng.pick([9, 0, 1])} UDP/TLS/RTP/SAVPF ${pt}`,
          `c=IN IP4 ${rng.pick(HOSTILE_ADDRESSES)}`,
          `a=mid:${mid}`,
          "a=recvonly",
          "a=rtcp-mux",
        );
        for (let i = rng.int(0, 6); i > 0; i--) {
          lines.push(`a=${candidateLine(rng)}`);
        }
        if (rng.bool(0.4)) lines.push(...hostileMediaLines(rng));
      }
      if (rng.bool(0.1)) {
        // Many m-lines, as many mids in the bundle.
        const extra = rng.int(10, 250);
        for (let i = 0; i < extra; i++) {
          lines.push(`m=video 9 UDP/TLS/RTP/SAVPF 96`, `a=mid:x${i}`);
        }
      }
      if (rng.bool(0.3)) lines.splice(rng.int(0, lines.length), 3);
      // Line ends other than CRLF, and a NUL (C strings end there).
      const eol = rng.pick(["\r\n", "\r\n", "\n", "\r", "\r\n\u0000"]);
      return lines.join(eol) + eol;
    }
  }
}

/** One `webrtc.answer` (`answer`) or `webrtc.candidate` message, as JSON text. */
export function sfuSignal(rng: Rng, answer: boolean): string {
  if (answer) {
    return JSON.stringify({ type: "webrtc.answer", sdp: answerSdp(rng) });
  }
  const candidate = rng.bool(0.1) ? null : {
    candidate: rng.bool(0.1) ? garbageValue(rng) : candidateLine(rng),
    sdpMid: rng.pick([null, "v", "a", "0", rng.string(70), 5]),
    sdpMLineIndex: rng.pick([null, 0, 1, 64, 65, -1, 0.5, "0"]),
  };
  return JSON.stringify({ type: "webrtc.candidate", candidate });
}
