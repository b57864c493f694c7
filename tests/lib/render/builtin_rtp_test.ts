/** The built-in renderer's RTP output (webrtc_sfu sessions), received on loopback UDP. */
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { memoryLogger } from "../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../lib/render/builtin.ts";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";

/** A UDP socket on 127.0.0.1 that keeps the RTP payload types it receives. */
async function rtpSink(): Promise<
  { socket: Socket; port: number; pts: Set<number> }
> {
  const socket = createSocket("udp4");
  const pts = new Set<number>();
  socket.on("message", (msg: Uint8Array) => {
    // RTP version 2; RTCP (payload types 200..204 in the second byte) is not media.
    if (
      msg.length >= 12 && msg[0] >> 6 === 2 && (msg[1] < 200 || msg[1] > 204)
    ) {
      pts.add(msg[1] & 0x7f);
    }
  });
  await new Promise<void>((r) => socket.bind(0, "127.0.0.1", r));
  return { socket, port: socket.address().port, pts };
}

Deno.test("an rtp-only render session starts no fMP4 encoder and sends H.264 (96) and Opus (111) RTP", async () => {
  const onClose: Array<() => void | Promise<void>> = [];
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    width: 160,
    height: 120,
  });
  const video = await rtpSink();
  const audio = await rtpSink();
  const before = liveEncoderPids().length;
  const session = await backend.open({
    sessionId: "session:rtp",
    avatarId: "ava",
    bgId: "studio",
    output: "rtp",
  });
  try {
    assert.equal(liveEncoderPids().length, before);
    const errors: Error[] = [];
    session.publishRtp!({
      host: "127.0.0.1",
      videoPort: video.port,
      audioPort: audio.port,
    }, (e) => errors.push(e));
    assert.equal(liveEncoderPids().length, before + 1);
    for (let i = 0; i < 100 && (!video.pts.size || !audio.pts.size); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual([...video.pts], [96]);
    assert.deepEqual([...audio.pts], [111]);
    assert.deepEqual(errors, []);
  } finally {
    await session.stop({ graceful: false, timeoutMs: 0 });
    video.socket.close();
    audio.socket.close();
    for (const hook of onClose) await hook();
  }
  assert.equal(liveEncoderPids().length, before);
});
