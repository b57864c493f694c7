import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { RtpOutput } from "../../../lib/render/rtp.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import { mountpointCredential } from "../../../lib/sfu/ingest.ts";
import { startTestJanus, streamingRequest } from "../sfu/_janus.ts";

/** The streaming plugin's `info` on a mountpoint, with its secret (ports, media age). */
async function mountpointInfo(
  url: string,
  token: string,
  adminKey: string,
  id: number,
) {
  const data = await streamingRequest(url, token, {
    request: "info",
    id,
    secret: await mountpointCredential(adminKey, "secret", id),
  });
  return data.info as {
    media: Array<{ type: string; age_ms?: number }>;
  };
}

Deno.test("RtpOutput sends H.264 and Opus RTP that a Janus mountpoint receives", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  const failures: Error[] = [];
  let out: RtpOutput | null = null;
  try {
    const mp = await sfu.createMountpoint("session:RTP");
    const createdAt = performance.now();
    const fmt = { width: 160, height: 120, fps: 25, sampleRate: 48000 };
    out = new RtpOutput(await ffmpegPath(), fmt, mp, (e) => failures.push(e));
    const frame = new Uint8Array(fmt.width * fmt.height * 3 / 2).fill(128);
    const audio = new Uint8Array(48000 / 25 * 2);
    for (let i = 0; i < 50; i++) {
      assert.equal(out.write(frame, audio), true);
      await new Promise((r) => setTimeout(r, 40));
    }
    // Janus's age_ms counts from creation until a packet arrives: past 1.5 s, an age
    // under 1 s means RTP arrived.
    assert.ok(performance.now() - createdAt > 1500);
    const info = await mountpointInfo(j.url, j.apiSecret, j.apiKey, mp.id);
    for (const type of ["video", "audio"]) {
      const m = info.media.find((x) => x.type === type);
      assert.ok(
        m?.age_ms !== undefined && m.age_ms < 1000,
        `${type} received: ${JSON.stringify(info.media)}`,
      );
    }
    assert.deepEqual(failures, []);
    const { clean } = await out.stop({ graceful: true, timeoutMs: 3000 });
    assert.equal(clean, true);
  } finally {
    await out?.stop({ graceful: false, timeoutMs: 0 });
    await j.stop();
  }
});

/** A UDP socket on 127.0.0.1 noting the RTP timestamps of H.264 packets with an IDR. */
async function idrSink(): Promise<
  { socket: Socket; port: number; idrTimestamps: Set<number> }
> {
  const socket = createSocket("udp4");
  const idrTimestamps = new Set<number>();
  socket.on("message", (pkt: Uint8Array) => {
    if (pkt.length < 13 || pkt[0] >> 6 !== 2 || (pkt[1] & 0x7f) !== 96) return;
    let off = 12 + 4 * (pkt[0] & 0x0f);
    if (pkt[0] & 0x10) off += 4 + 4 * ((pkt[off + 2] << 8) | pkt[off + 3]);
    if (carriesIdr(pkt.subarray(off))) {
      idrTimestamps.add(new DataView(pkt.buffer, pkt.byteOffset).getUint32(4));
    }
  });
  await new Promise<void>((r) => socket.bind(0, "127.0.0.1", r));
  return { socket, port: socket.address().port, idrTimestamps };
}

/** Whether an H.264 RTP payload (RFC 6184) starts or carries an IDR slice (NAL 5). */
function carriesIdr(payload: Uint8Array): boolean {
  const type = payload[0] & 0x1f;
  if (type === 5) return true;
  if (type === 28) {
    return (payload[1] & 0x80) !== 0 && (payload[1] & 0x1f) === 5;
  }
  if (type === 24) {
    for (let i = 1; i + 2 < payload.length;) {
      const size = (payload[i] << 8) | payload[i + 1];
      if ((payload[i + 2] & 0x1f) === 5) return true;
      i += 2 + size;
    }
  }
  return false;
}

Deno.test("RtpOutput opens its stream with keyframes (every frame for 0.5 s, every 4th until 2 s), so an early viewer waits no GOP", async () => {
  // A viewer's PeerConnection comes up while the session's first frames are sent; one
  // that missed the first keyframe waited a whole GOP (1 s) for its first frame.
  const video = await idrSink();
  const audio = await idrSink();
  const fmt = { width: 160, height: 120, fps: 25, sampleRate: 48000 };
  const failures: Error[] = [];
  const out = new RtpOutput(
    await ffmpegPath(),
    fmt,
    { host: "127.0.0.1", videoPort: video.port, audioPort: audio.port },
    (e) => failures.push(e),
  );
  try {
    const frame = new Uint8Array(fmt.width * fmt.height * 3 / 2).fill(128);
    const audio = new Uint8Array(48000 / 25 * 2);
    for (let i = 0; i < 50; i++) {
      assert.equal(out.write(frame, audio), true);
      await new Promise((r) => setTimeout(r, 40));
    }
    await out.stop({ graceful: true, timeoutMs: 3000 });
    await new Promise((r) => setTimeout(r, 200));
    const ts = [...video.idrTimestamps].sort((a, b) => a - b);
    assert.ok(ts.length > 0, "no keyframe received");
    // 90 kHz RTP clock, 3600 per frame at 25 fps: frames 0..11 are all keyframes, then
    // no keyframe is more than 4 frames from the last until 2 s.
    const frames = ts.map((t) => (t - ts[0]) / 3600);
    const msg = `keyframes at frames ${frames.join(", ")}`;
    for (let n = 0; n < 12; n++) assert.ok(frames.includes(n), msg);
    const early = frames.filter((n) => n < 50);
    for (let i = 1; i < early.length; i++) {
      assert.ok(early[i] - early[i - 1] <= 4, msg);
    }
    assert.ok(early.at(-1)! >= 44, msg);
    assert.deepEqual(failures, []);
  } finally {
    await out.stop({ graceful: false, timeoutMs: 0 });
    video.socket.close();
    audio.socket.close();
  }
});
