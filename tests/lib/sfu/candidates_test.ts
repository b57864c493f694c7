/**
 * Browser ICE candidates are screened before Janus sees them (DECISIONS 11, issue 22):
 * the rules on candidate lines, and with a real Janus, a trickled candidate naming an
 * internal address no longer makes Janus send STUN there.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { memoryLogger } from "../../../lib/log.ts";
import {
  candidateAllowed,
  type CandidatePolicy,
  screenAnswerSdp,
  strictPolicy,
} from "../../../lib/sfu/candidates.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import { SfuLink } from "../../../lib/media/sfu_signalling.ts";
import type { ServerMessage } from "../../../lib/media/protocol.ts";
import { startTestJanus } from "./_janus.ts";
import { detectIceInterface } from "../../../lib/sfu/launch.ts";

const strict: CandidatePolicy = {
  allowPrivate: false,
  ingestHost: "10.0.0.9",
  ingestPorts: new Set([21000, 21001]),
};
const line = (addr: string, port = 50000, rest = "") =>
  `candidate:842163049 1 udp 1677729535 ${addr} ${port} typ srflx${rest}`;

Deno.test("candidateAllowed(): public addresses and mDNS names pass; loopback, private, link-local, the ingest address and junk do not", () => {
  for (const ok of ["203.0.114.7", "2a00:1450:4001:81b::200e", "8.8.8.8"]) {
    assert.ok(candidateAllowed(line(ok), strict), ok);
  }
  assert.ok(
    candidateAllowed(
      line("6f1c7a0e-1c2b-4c7e-9a55-1b2c3d4e5f60.local"),
      strict,
    ),
  );
  assert.ok(candidateAllowed("", strict), "the end of candidates");
  assert.ok(
    candidateAllowed(
      `a=${line("8.8.8.8", 3478, " raddr 0.0.0.0 rport 0")}`,
      strict,
    ),
  );
  for (
    const bad of [
      "127.0.0.1",
      "10.1.2.3",
      // Octal to Janus's ICE stack (getaddrinfo): 10.0.0.1 and 172.16.0.1.
      "012.0.0.1",
      "172.020.0.1",
      "192.168.1.1",
      "172.20.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "0.0.0.0",
      "metadata.google.internal",
      "localhost",
      "10.0.0.9",
    ]
  ) {
    assert.equal(candidateAllowed(line(bad), strict), false, bad);
  }
  for (
    const junk of [
      "candidate:x",
      "hello",
      line("8.8.8.8", 0),
      line("8.8.8.8", 70000),
      // A foundation longer than Janus reads would shift its fields against ours.
      line("8.8.8.8").replace("842163049", "f".repeat(32)),
      `${line("8.8.8.8")}\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host`,
    ]
  ) {
    assert.equal(candidateAllowed(junk, strict), false, junk);
  }
  // Private targets allowed (tests, local demos): private passes, ingest ports never.
  const loose = {
    allowPrivate: true,
    ingestHost: "127.0.0.1",
    ingestPorts: new Set([21000]),
  };
  assert.ok(candidateAllowed(line("127.0.0.1", 50000), loose));
  assert.equal(candidateAllowed(line("127.0.0.1", 21000), loose), false);
});

Deno.test("candidateAllowed(): a candidate naming a public address of the SFU host (any interface, any spelling) is dropped, whatever the port", () => {
  // Janus on this host: ingest on loopback, the host's public addresses on other
  // interfaces (injected as Deno.networkInterfaces() would list them).
  const mp = {
    id: 7,
    host: "127.0.0.1",
    videoPort: 21000,
    audioPort: 21001,
    srtp: "",
  };
  const policy = strictPolicy(mp, [
    "127.0.0.1",
    "::1",
    "10.0.0.4",
    "81.2.69.160",
    "2a01:4f8:c17:1a2b::1",
  ]);
  for (
    const own of [
      "81.2.69.160",
      "::ffff:81.2.69.160",
      "::ffff:5102:45a0",
      "2a01:4f8:c17:1a2b::1",
      "2a01:04f8:0c17:1a2b:0:0:0:1",
    ]
  ) {
    for (const port of [8088, 50000, 21000]) {
      assert.equal(
        candidateAllowed(line(own, port), policy),
        false,
        `${own} ${port}`,
      );
    }
  }
  // Other public addresses still pass; the same rule with private targets allowed.
  assert.ok(candidateAllowed(line("81.2.69.161"), policy));
  assert.ok(candidateAllowed(line("2a01:4f8:c17:1a2b::2"), policy));
  const loose = { ...policy, allowPrivate: true };
  assert.equal(candidateAllowed(line("81.2.69.160"), loose), false);
  assert.ok(candidateAllowed(line("10.0.0.4", 50000), loose));
});

Deno.test("screenAnswerSdp() drops the answer's hostile candidate lines and keeps the rest", () => {
  const sdp = [
    "v=0",
    "m=video 9 UDP/TLS/RTP/SAVPF 96",
    "a=mid:v",
    `a=${line("8.8.8.8")}`,
    `a=${line("127.0.0.1")}`,
    `a=${line("abc.local")}`,
    `a=${line("169.254.169.254")}`,
    ` a=${line("10.9.9.9")}`,
    `A=CANDIDATE:${line("10.9.9.8").slice(10)}`,
    "a=end-of-candidates",
    "",
  ].join("\r\n");
  const out = screenAnswerSdp(sdp, strict);
  assert.ok(out.includes("8.8.8.8"));
  assert.ok(out.includes("abc.local"));
  assert.ok(!out.includes("127.0.0.1"));
  assert.ok(!out.includes("169.254"));
  assert.ok(!out.includes("10.9.9."));
  assert.ok(out.includes("a=end-of-candidates"));
});

/** A recvonly answer to Janus's offer (no real DTLS: enough for ICE checks to start). */
function answerTo(offer: string): string {
  const out = [
    "v=0",
    "o=- 1 1 IN IP4 0.0.0.0",
    "s=-",
    "t=0 0",
  ];
  const group = /^a=group:BUNDLE .*$/m.exec(offer);
  if (group) out.push(group[0]);
  out.push(
    "a=ice-ufrag:Zq7x",
    "a=ice-pwd:0123456789abcdefghijklmn",
    `a=fingerprint:sha-256 ${Array(32).fill("AB").join(":")}`,
    "a=setup:active",
  );
  for (const section of offer.split(/\r?\n(?=m=)/).slice(1)) {
    const m = /^m=(\w+) \d+ (\S+) (\d+)/.exec(section)!;
    const [, kind, proto, pt] = m;
    out.push(`m=${kind} 9 ${proto} ${pt}`, "c=IN IP4 0.0.0.0");
    const mid = /^a=mid:(\S+)$/m.exec(section);
    if (mid) out.push(`a=mid:${mid[1]}`);
    out.push("a=recvonly", "a=rtcp-mux");
    for (const l of section.split(/\r?\n/)) {
      if (l.startsWith(`a=rtpmap:${pt} `) || l.startsWith(`a=fmtp:${pt} `)) {
        out.push(l);
      }
    }
  }
  return out.join("\r\n") + "\r\n";
}

/** UDP datagrams a port on `host` receives while `fn` runs and `waitMs` after. */
async function datagramsDuring(
  host: string,
  fn: (port: number) => Promise<void>,
  waitMs: number,
): Promise<number> {
  const sock = dgram.createSocket("udp4");
  let n = 0;
  sock.on("message", () => n++);
  await new Promise<void>((r, j) => {
    sock.once("error", j);
    sock.bind(0, host, () => r());
  });
  try {
    await fn(sock.address().port);
    await new Promise((r) => setTimeout(r, waitMs));
    return n;
  } finally {
    sock.close();
  }
}

Deno.test("a trickled candidate naming an internal address never reaches Janus: it sends no STUN there (without the screen, it does)", async () => {
  const j = await startTestJanus();
  // The machine's own private address, where Janus gathers its candidates.
  const iface = detectIceInterface();
  const internal =
    Deno.networkInterfaces().find((i) =>
      i.name === iface && i.family === "IPv4"
    )!.address;
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  try {
    const mp = await sfu.createMountpoint("session:ICE");
    const probe = async (policy: CandidatePolicy) =>
      await datagramsDuring(internal, async (port) => {
        const sent: ServerMessage[] = [];
        const link = new SfuLink(sfu, mp, memoryLogger(), "session:ICE", {
          send: (_ws, msg) => sent.push(msg),
          onFlowing: () => {},
          onViewerFailed: () => {},
          onLost: () => {},
        }, policy);
        const ws = {} as WebSocket;
        link.attach(ws);
        for (let i = 0; i < 100 && !sent.length; i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        const offer = sent.find((m) => m.type === "webrtc.offer");
        assert.ok(offer && offer.type === "webrtc.offer");
        await link.handle(ws, {
          type: "webrtc.answer",
          sdp: answerTo(offer.sdp),
        });
        await link.handle(ws, {
          type: "webrtc.candidate",
          candidate: {
            candidate:
              `candidate:1 1 udp 2122260223 ${internal} ${port} typ host`,
            sdpMid: "v",
            sdpMLineIndex: 0,
          },
        });
        setTimeout(() => link.close(), 2_500);
      }, 3_000);
    // The control: private targets allowed, the candidate goes through, Janus probes it.
    const loose = await probe({ ...strictPolicy(mp), allowPrivate: true });
    assert.ok(loose > 0, "Janus sends STUN to a candidate it is given");
    assert.equal(
      await probe(strictPolicy(mp)),
      0,
      "nothing to the screened one",
    );
    await sfu.destroyMountpoint(mp.id);
  } finally {
    await j.stop();
  }
});
