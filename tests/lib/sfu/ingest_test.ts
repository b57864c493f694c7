/**
 * Mountpoint ingest is not open to the network (DECISIONS 11, issue 22): bound to
 * loopback when Janus is on this host, and SRTP-keyed per mountpoint, so RTP from any
 * source but the holder's encoder is dropped by Janus, while the encoder's is taken in.
 */
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { RtpOutput } from "../../../lib/render/rtp.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import {
  defaultIngestHost,
  mountpointCredential,
  mountpointSrtpKey,
} from "../../../lib/sfu/ingest.ts";
import { startTestJanus, streamingRequest } from "./_janus.ts";

Deno.test("defaultIngestHost(): loopback for Janus on this host, its private address for Janus elsewhere", () => {
  const local = ["127.0.0.1", "192.0.2.2"];
  assert.equal(
    defaultIngestHost("http://127.0.0.1:8088/janus", local),
    "127.0.0.1",
  );
  assert.equal(
    defaultIngestHost("http://192.0.2.2:8088/janus", local),
    "127.0.0.1",
  );
  assert.equal(
    defaultIngestHost("http://10.0.0.7:8088/janus", local),
    "10.0.0.7",
  );
  assert.equal(
    defaultIngestHost("http://janus.internal/janus", local),
    "127.0.0.1",
  );
});

Deno.test("mountpointSrtpKey(): 30 bytes per mountpoint, from the admin key", async () => {
  const a = await mountpointSrtpKey("k".repeat(32), 1);
  assert.equal(atob(a).length, 30);
  assert.notEqual(a, await mountpointSrtpKey("k".repeat(32), 2));
  assert.notEqual(a, await mountpointSrtpKey("j".repeat(32), 1));
  assert.equal(a, await mountpointSrtpKey("k".repeat(32), 1));
});

/** Janus's log lines that say an ingest packet failed SRTP authentication. */
const refusedLines = (log: string[]) =>
  log.filter((l) => /SRTP unprotect error/.test(l)).length;

Deno.test("plain RTP from an unrelated source is refused by the mountpoint; the holder's SRTP encoder is taken in", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  let out: RtpOutput | null = null;
  const sock = createSocket("udp4");
  try {
    const mp = await sfu.createMountpoint("session:INGEST");
    assert.equal(mp.host, "127.0.0.1");
    const info = await streamingRequest(j.url, j.apiSecret, {
      request: "info",
      id: mp.id,
      secret: await mountpointCredential(j.apiKey, "secret", mp.id),
    });
    assert.equal((info.info as { srtp?: boolean }).srtp, true);
    // The attacker: 150 well-formed Opus RTP packets to the audio ingest port.
    await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
    for (let i = 0; i < 150; i++) {
      const pkt = new Uint8Array(60);
      pkt.set([0x80, 111, i >> 8, i & 255, 0, 0, 3, 192, 0, 0, 0, 7]);
      await new Promise((r) => sock.send(pkt, mp.audioPort, mp.host, r));
    }
    let refused = 0;
    for (let i = 0; i < 40 && refused < 150; i++) {
      await new Promise((r) => setTimeout(r, 50));
      refused = refusedLines(j.log());
    }
    assert.equal(refused, 150, "every injected packet failed authentication");
    // The holder's encoder, with the mountpoint's key: not one of its packets refused.
    const fmt = { width: 160, height: 120, fps: 25, sampleRate: 48000 };
    const failures: Error[] = [];
    out = new RtpOutput(await ffmpegPath(), fmt, mp, (e) => failures.push(e));
    const frame = new Uint8Array(fmt.width * fmt.height * 3 / 2).fill(128);
    const audio = new Uint8Array(48000 / 25 * 2);
    for (let i = 0; i < 40; i++) {
      assert.equal(out.write(frame, audio), true);
      await new Promise((r) => setTimeout(r, 40));
    }
    const after = await streamingRequest(j.url, j.apiSecret, {
      request: "info",
      id: mp.id,
      secret: await mountpointCredential(j.apiKey, "secret", mp.id),
    });
    const media = (after.info as { media: { type: string; age_ms?: number }[] })
      .media;
    assert.ok(
      media.every((m) => (m.age_ms ?? 1e9) < 1000),
      JSON.stringify(media),
    );
    assert.equal(refusedLines(j.log()), 150, "the encoder's SRTP verifies");
    assert.deepEqual(failures, []);
  } finally {
    sock.close();
    await out?.stop({ graceful: false, timeoutMs: 0 });
    await j.stop();
  }
});
