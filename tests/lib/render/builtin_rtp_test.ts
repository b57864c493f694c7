/** The built-in renderer's RTP output (webrtc_sfu sessions), received on loopback UDP. */
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { memoryLogger } from "../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../lib/render/builtin.ts";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import type { SpeechEvent } from "../../../lib/ports/render.ts";
import { MAX_RTP_RESTARTS } from "../../../lib/render/rtp.ts";
import { pidExists } from "./_helpers.ts";

/** One video frame at 25 fps: the tolerance of every position check. */
const FRAME_MS = 40;

/** `seconds` of a loud 440 Hz tone at 16 kHz. */
function tone(seconds: number): Int16Array {
  const pcm = new Int16Array(Math.round(seconds * 16000));
  for (let i = 0; i < pcm.length; i++) {
    pcm[i] = Math.round(12000 * Math.sin(2 * Math.PI * 440 * i / 16000));
  }
  return pcm;
}

/**
 * A UDP socket on 127.0.0.1 that keeps the RTP payload types it receives, and the
 * SSRCs with their packet counts.
 */
async function rtpSink(): Promise<
  {
    socket: Socket;
    port: number;
    pts: Set<number>;
    ssrcs: Map<number, number>;
  }
> {
  const socket = createSocket("udp4");
  const pts = new Set<number>();
  const ssrcs = new Map<number, number>();
  socket.on("message", (msg: Uint8Array) => {
    // RTP version 2; RTCP (payload types 200..204 in the second byte) is not media.
    if (
      msg.length >= 12 && msg[0] >> 6 === 2 && (msg[1] < 200 || msg[1] > 204)
    ) {
      pts.add(msg[1] & 0x7f);
      const ssrc = new DataView(msg.buffer, msg.byteOffset).getUint32(8);
      ssrcs.set(ssrc, (ssrcs.get(ssrc) ?? 0) + 1);
    }
  });
  await new Promise<void>((r) => socket.bind(0, "127.0.0.1", r));
  return { socket, port: socket.address().port, pts, ssrcs };
}

/** An rtp-only session of a small built-in renderer, and two UDP sinks for its RTP. */
async function rtpSession(sessionId: string) {
  const onClose: Array<() => void | Promise<void>> = [];
  const log = memoryLogger();
  const backend = createBuiltinRenderer({ log, onClose }, {
    width: 160,
    height: 120,
  });
  const video = await rtpSink();
  const audio = await rtpSink();
  const before = liveEncoderPids().length;
  const session = await backend.open({
    sessionId,
    avatarId: "ava",
    bgId: "studio",
    output: "rtp",
  });
  /**
   * Publishes the session's RTP to the two sinks; the speech events it reports (when
   * each came) and the errors.
   */
  const publish = () => {
    const events: Array<SpeechEvent & { at: number }> = [];
    const errors: Error[] = [];
    session.publishRtp!({
      host: "127.0.0.1",
      videoPort: video.port,
      audioPort: audio.port,
    }, {
      onError: (e) => errors.push(e),
      onSpeech: (e) => events.push({ ...e, at: Date.now() }),
    });
    return { events, errors };
  };
  return {
    session,
    video,
    audio,
    before,
    log,
    publish,
    async close() {
      await session.stop({ graceful: false, timeoutMs: 0 });
      video.socket.close();
      audio.socket.close();
      for (const hook of onClose) await hook();
    },
  };
}

Deno.test("an rtp-only render session starts no fMP4 encoder and sends H.264 (96) and Opus (111) RTP", async () => {
  const { session, video, audio, before, close } = await rtpSession(
    "session:rtp",
  );
  try {
    assert.equal(liveEncoderPids().length, before);
    const errors: Error[] = [];
    session.publishRtp!({
      host: "127.0.0.1",
      videoPort: video.port,
      audioPort: audio.port,
    }, { onError: (e) => errors.push(e) });
    assert.equal(liveEncoderPids().length, before + 1);
    for (let i = 0; i < 100 && (!video.pts.size || !audio.pts.size); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual([...video.pts], [96]);
    assert.deepEqual([...audio.pts], [111]);
    assert.deepEqual(errors, []);
  } finally {
    await close();
  }
  assert.equal(liveEncoderPids().length, before);
});

Deno.test("the RTP output reports speech in the sender's wall clock and cuts at what it was written", async () => {
  const { session, audio, publish, close } = await rtpSession(
    "session:rtp-speech",
  );
  try {
    const { events, errors } = publish();
    await until("RTP", () => audio.pts.size > 0);
    const pushedAt = Date.now();
    session.pushAudio(tone(1.8), 16000, "turn_1");
    // Nothing was taken between the push and this read: all of it is queued.
    const pushed = session.stats().queuedAudioSamples;
    await until("speaking", () => events.length > 0);
    const on = events[0];
    assert.equal(on.speaking, true);
    assert.equal(on.tag, "turn_1");
    assert.ok(
      on.mediaTimeMs >= pushedAt && on.mediaTimeMs <= on.at + FRAME_MS,
      `speech starts (epoch ms ${on.mediaTimeMs}) after the push ` +
        `(${pushedAt}) and within the frame its event followed (${on.at})`,
    );
    await new Promise((r) => setTimeout(r, 500));
    // Interrupt runs within one tick: what left the queue went to the RTP encoder.
    const written = pushed - session.stats().queuedAudioSamples;
    const cut = await session.interrupt({ tag: "turn_1", all: true });
    assert.ok(cut, "the cut reports the turn");
    assert.equal(cut.tag, "turn_1");
    assert.equal(cut.wasSpeaking, true);
    assert.ok(
      Math.abs(cut.playedMs - written / 48) <= FRAME_MS,
      `played_ms ${cut.playedMs} vs ${written / 48} ms written to RTP`,
    );
    await until("the cut event", () => events.length > 1);
    const off = events[1];
    assert.equal(off.speaking, false);
    assert.equal(off.tag, "turn_1");
    assert.deepEqual(off.cut, { playedMs: cut.playedMs });
    // A cut is at the start of the frame after it: its event follows that write.
    assert.ok(off.mediaTimeMs > on.mediaTimeMs && off.mediaTimeMs <= off.at);
    assert.equal(session.stats().queuedAudioSamples, 0);
    assert.deepEqual(errors, []);
  } finally {
    await close();
  }
});

Deno.test("builtin renderer: over RTP, caption marks and a turn's end ride the sender's clock", async () => {
  const { session, audio, publish, close } = await rtpSession(
    "session:rtp-captions",
  );
  try {
    const { events } = publish();
    await until("RTP", () => audio.pts.size > 0);
    // A 1.8-s answer pushed at once, a caption before it and one after 1 s of it.
    session.markText("turn_1", 1);
    session.pushAudio(tone(1), 16000, "turn_1");
    session.markText("turn_1", 2);
    session.pushAudio(tone(0.8), 16000, "turn_1");
    assert.equal(await session.endAudio("turn_1"), false);
    await until("the end", () => events.some((e) => e.ended));
    const on = events.find((e) => e.speaking && e.mark === undefined)!;
    const marks = events.filter((e) => e.mark !== undefined);
    const off = events.find((e) => !e.speaking && e.mark === undefined)!;
    assert.deepEqual(marks.map((e) => e.mark), [1, 2]);
    // Epoch ms of the sender's clock, as avatar.speaking on this transport: when the
    // encoder took the frame carrying each (the event leaves then) plus the offset in
    // that frame.
    for (const e of [on, ...marks, off]) {
      assert.ok(
        e.mediaTimeMs >= e.at - 2 && e.mediaTimeMs <= e.at + FRAME_MS,
        JSON.stringify(e),
      );
    }
    assert.ok(Math.abs(marks[0].mediaTimeMs - on.mediaTimeMs) <= FRAME_MS);
    // 1 s and 1.8 s of audio later on the encoder's clock: the encoder takes frames at
    // real time (faster while it catches up a backlog, slower while it falls behind).
    const gap = (e: { mediaTimeMs: number; at: number }, ms: number) => {
      const d = e.mediaTimeMs - on.mediaTimeMs;
      assert.ok(
        Math.abs(d - (e.at - on.at)) <= FRAME_MS + 2 && d > 0,
        `${d} ms for ${ms} ms of audio (delivered ${e.at - on.at} ms apart)`,
      );
    };
    gap(marks[1], 1000);
    gap(off, 1800);
    assert.ok(off.mediaTimeMs > marks[1].mediaTimeMs);
    assert.ok(events.indexOf(off) < events.findIndex((e) => e.ended));
  } finally {
    await close();
  }
});

Deno.test("an RTP encoder behind its input: speech is stamped when the encoder takes its audio, not when it was written", async () => {
  const { session, audio, before, publish, close } = await rtpSession(
    "session:rtp-backlog",
  );
  let stopped = 0;
  try {
    const { events } = publish();
    await until("RTP", () => audio.pts.size > 0);
    // ffmpeg stalls (a loaded machine): frames queue up, first in its socket's buffer.
    stopped = rtpPid(before)!;
    Deno.kill(stopped, "SIGSTOP");
    await new Promise((r) => setTimeout(r, 500));
    const pushedAt = Date.now();
    session.pushAudio(tone(0.4), 16000, "turn_1");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(
      events.length,
      0,
      "no event for audio the encoder has not taken",
    );
    const resumedAt = Date.now();
    Deno.kill(stopped, "SIGCONT");
    stopped = 0;
    await until("speaking", () => events.length > 0);
    const on = events[0];
    assert.equal(on.speaking, true);
    // Its audio left the encoder after the stall, a second after it was written.
    assert.ok(
      on.mediaTimeMs >= resumedAt && on.mediaTimeMs <= on.at + FRAME_MS,
      `speech at ${on.mediaTimeMs - pushedAt} ms after the push; resumed at ` +
        `${resumedAt - pushedAt}, delivered at ${on.at - pushedAt}`,
    );
  } finally {
    if (stopped) Deno.kill(stopped, "SIGCONT");
    await close();
  }
});

/** Polls `check` every 25 ms; fails naming `what` after 5 s (a hang guard). */
async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(check(), `waited too long for ${what}`);
}

/** The RTP encoder pid of a session opened after `before` encoders (it is the only one). */
function rtpPid(before: number): number | undefined {
  const pids = liveEncoderPids();
  return pids.length === before + 1 ? pids[before] : undefined;
}

Deno.test("a killed RTP encoder restarts toward the same target: RTP flows again from a new source, speech goes on, the old ffmpeg is reaped", async () => {
  const { session, video, audio, before, log, close } = await rtpSession(
    "session:rtp-restart",
  );
  const errors: Error[] = [];
  const events: SpeechEvent[] = [];
  let killed = 0;
  try {
    session.publishRtp!({
      host: "127.0.0.1",
      videoPort: video.port,
      audioPort: audio.port,
    }, { onError: (e) => errors.push(e), onSpeech: (e) => events.push(e) });
    await until("RTP", () => video.ssrcs.size > 0 && audio.ssrcs.size > 0);
    const [first] = video.ssrcs.keys();
    killed = rtpPid(before)!;
    Deno.kill(killed, "SIGKILL");
    await until("a new encoder", () => {
      const pid = rtpPid(before);
      return pid !== undefined && pid !== killed;
    });
    // Packets from a new RTP source (new SSRC) reach the same ports, and keep coming.
    await until("RTP again", () => video.ssrcs.size === 2);
    const second = [...video.ssrcs.keys()].find((s) => s !== first)!;
    await until("more RTP", () => video.ssrcs.get(second)! >= 10);
    await until("audio again", () => audio.ssrcs.size === 2);
    assert.deepEqual(errors, [], "the sink hears of no failure");
    assert.ok(
      log.lines.some((l) =>
        l.includes('"warn"') && l.includes("render rtp encoder restarted")
      ),
      "a warn line for the restart",
    );
    // Speech on the restarted output: the events come in the sender's clock.
    const pushedAt = Date.now();
    session.pushAudio(tone(0.4), 16000, "turn_1");
    assert.equal(await session.endAudio("turn_1"), false);
    await until("the turn's end", () => events.some((e) => e.ended));
    const on = events.find((e) => e.speaking)!;
    assert.equal(on.tag, "turn_1");
    assert.ok(on.mediaTimeMs >= pushedAt);
  } finally {
    await close();
  }
  assert.equal(liveEncoderPids().length, before);
  assert.ok(!pidExists(killed), "the killed ffmpeg is reaped");
});

Deno.test(
  `an RTP encoder killed ${
    MAX_RTP_RESTARTS + 1
  } times within a minute: the output fails for good, no encoder left`,
  async () => {
    const { session, video, audio, before, close } = await rtpSession(
      "session:rtp-restart-limit",
    );
    const errors: Error[] = [];
    const pids: number[] = [];
    try {
      session.publishRtp!({
        host: "127.0.0.1",
        videoPort: video.port,
        audioPort: audio.port,
      }, { onError: (e) => errors.push(e) });
      for (let k = 0; k <= MAX_RTP_RESTARTS; k++) {
        await until(`encoder ${k + 1}`, () => {
          const pid = rtpPid(before);
          return pid !== undefined && !pids.includes(pid);
        });
        assert.deepEqual(errors, [], `no failure after ${k} kills`);
        const pid = rtpPid(before)!;
        pids.push(pid);
        Deno.kill(pid, "SIGKILL");
      }
      await until("the failure", () => errors.length > 0);
      assert.equal(errors.length, 1);
      assert.match(errors[0].message, /encoder exited/);
      await until("no encoder", () => liveEncoderPids().length === before);
      // The session itself runs on (the media session ends it `render_failed`).
      assert.equal(session.stats().queuedAudioSamples, 0);
    } finally {
      await close();
    }
    assert.equal(liveEncoderPids().length, before);
    for (const pid of pids) assert.ok(!pidExists(pid), `pid ${pid} reaped`);
  },
);
