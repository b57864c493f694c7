/**
 * The remote renderer against a real render worker: streaming over its socket, speech
 * events, caption marks and cuts coming back, refusals mapped to RenderStartError, the
 * worker's HTTP API (audio, interrupt, end, mark, bearer token, a bad upgrade) and its
 * shutdown stopping the sessions' encoders.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import type { SpeechEvent } from "../../../lib/ports/render.ts";
import { createRemoteRenderer } from "../../../lib/render/remote.ts";
import { MAX_MARKS } from "../../../lib/render/speech_runs.ts";
import { MAX_AGENT_AUDIO_AHEAD_MS } from "../../../lib/render/voice.ts";
import {
  assertNoEncoders,
  RecordingSink,
  startWorker,
  timelines,
  tone,
  WORKER_TOKEN as TOKEN,
} from "./_helpers.ts";
import { isStartError, OPEN } from "./_remote.ts";

Deno.test("remote renderer against a real worker", async (t) => {
  const worker = startWorker();
  const log = memoryLogger();
  const backend = createRemoteRenderer({ log }, {
    url: worker.url,
    token: TOKEN,
  });
  try {
    await t.step(
      "streams init then segments over the worker's socket",
      async () => {
        const session = await backend.open(OPEN);
        const sink = new RecordingSink();
        session.attach(sink);
        await sink.until(() => sink.segments.length >= 5);
        assert.equal(sink.inits.length, 1);
        assert.match(
          sink.inits[0].mime,
          /^video\/mp4; codecs="avc1\.42[0-9a-f]{4}, mp4a\.40\.2"$/,
        );
        const lines = timelines(sink.inits[0].init, sink.segments);
        for (const [, list] of lines) assert.equal(list[0].start, 0);
        assert.equal(lines.get(1)![0].sync, true);

        session.pushAudio(tone(0.3, 16000), 16000);
        session.interrupt();
        session.pushAudio(tone(0.1, 16000), 16000);

        // Takeover: a second attach gets its own init and timestamps from 0; this
        // viewer decodes Opus (`media.config`), and the worker streams it.
        const second = Object.assign(new RecordingSink(), {
          audio: "opus" as const,
        });
        session.attach(second);
        await second.until(() => second.segments.length >= 3);
        assert.equal(second.inits.length, 1);
        assert.match(second.inits[0].mime, /, opus"$/);
        for (
          const [, list] of timelines(second.inits[0].init, second.segments)
        ) {
          assert.equal(list[0].start, 0);
        }
        assert.deepEqual(sink.errors, []);
        assert.deepEqual(second.errors, []);

        const r = await session.stop({ graceful: true, timeoutMs: 5000 });
        assert.equal(r.clean, true);
        assert.ok(
          session.segmentsRendered >=
            sink.segments.length + second.segments.length - 1,
        );
        assert.deepEqual(
          await session.stop({ graceful: false, timeoutMs: 0 }),
          r,
        );
        assertNoEncoders();
      },
    );

    await t.step(
      "tagged audio: speech events and the cut come through the worker",
      async () => {
        const session = await backend.open(OPEN);
        const events: SpeechEvent[] = [];
        const sink = new RecordingSink();
        const speechSink = Object.assign(sink, {
          onSpeech: (e: SpeechEvent) => events.push(e),
        });
        session.attach(speechSink);
        await sink.until(() => sink.segments.length >= 3);
        session.pushAudio(tone(1.5, 16000), 16000, "turn_1");
        await sink.until(() => events.length >= 1);
        assert.equal(events[0].speaking, true);
        assert.equal(events[0].tag, "turn_1");
        await new Promise((r) => setTimeout(r, 300));
        const cut = await session.interrupt({ tag: "turn_1" });
        assert.equal(cut?.tag, "turn_1");
        assert.equal(cut?.wasSpeaking, true);
        assert.ok(
          cut!.playedMs > 0 && cut!.playedMs < 1500,
          `${cut?.playedMs}`,
        );
        await sink.until(() => events.some((e) => e.cut));
        const stop = events.find((e) => e.cut)!;
        assert.deepEqual(
          { speaking: stop.speaking, tag: stop.tag, cut: stop.cut },
          { speaking: false, tag: "turn_1", cut: { playedMs: cut!.playedMs } },
        );
        assert.ok(stop.mediaTimeMs > events[0].mediaTimeMs);
        await session.stop({ graceful: false, timeoutMs: 0 });
      },
    );

    await t.step(
      "a 5-s answer pushed at once goes whole; its caption mark and end come back",
      async () => {
        const session = await backend.open(OPEN);
        const events: SpeechEvent[] = [];
        const sink = Object.assign(new RecordingSink(), {
          onSpeech: (e: SpeechEvent) => events.push(e),
        });
        session.attach(sink);
        await sink.until(() => sink.segments.length >= 3);
        session.markText("turn_1", 1);
        for (let i = 0; i < 50; i++) {
          assert.equal(
            session.pushAudio(tone(0.1, 16000), 16000, "turn_1"),
            true,
          );
          if (i === 24) session.markText("turn_1", 2);
        }
        assert.equal(await session.endAudio("turn_1"), false);
        await sink.until(() => events.some((e) => e.ended), 15_000);
        const on = events.find((e) => e.speaking && e.mark === undefined)!;
        const marks = events.filter((e) => e.mark !== undefined);
        assert.deepEqual(marks.map((e) => e.mark), [1, 2]);
        assert.equal(marks[1].mediaTimeMs - on.mediaTimeMs, 2500);
        const off = events.find((e) => !e.speaking && e.mark === undefined)!;
        assert.ok(
          Math.abs(off.mediaTimeMs - on.mediaTimeMs - 5000) <= 40,
          `${off.mediaTimeMs - on.mediaTimeMs}`,
        );
        assert.equal(session.stats().droppedAudioSamples, 0);
        await session.stop({ graceful: false, timeoutMs: 0 });
      },
    );

    await t.step(
      "a flood of caption marks: the newest MAX_MARKS are posted, the audio goes through",
      async () => {
        const session = await backend.open(OPEN);
        const events: SpeechEvent[] = [];
        const sink = Object.assign(new RecordingSink(), {
          onSpeech: (e: SpeechEvent) => events.push(e),
        });
        session.attach(sink);
        await sink.until(() => sink.segments.length >= 3);
        session.pushAudio(tone(0.5, 16000), 16000, "turn_1");
        const flood = 5_000;
        for (let id = 1; id <= flood; id++) session.markText("turn_1", id);
        assert.equal(await session.endAudio("turn_1"), false);
        await sink.until(() => events.some((e) => e.ended), 15_000);
        const marks = events.filter((e) => e.mark !== undefined)
          .map((e) => e.mark!);
        assert.equal(marks.length, MAX_MARKS);
        assert.equal(marks.at(-1), flood);
        await session.stop({ graceful: false, timeoutMs: 0 });
      },
    );

    await t.step("open() maps refusals to RenderStartError kinds", async () => {
      await assert.rejects(
        backend.open({ ...OPEN, avatarId: "nobody" }),
        isStartError("misconfigured"),
      );
      const wrongToken = createRemoteRenderer({ log }, {
        url: worker.url,
        token: "nope",
      });
      await assert.rejects(
        wrongToken.open(OPEN),
        isStartError("misconfigured"),
      );
    });

    await t.step(
      "the worker takes audio and interrupts over HTTP",
      async () => {
        const auth = { authorization: `Bearer ${TOKEN}` };
        const call = async (method: string, path: string, body?: BodyInit) => {
          const res = await fetch(`${worker.url}${path}`, {
            method,
            headers: auth,
            body,
          });
          const text = await res.text();
          return { status: res.status, body: text ? JSON.parse(text) : null };
        };
        const opened = await call(
          "POST",
          "/v1/render/sessions",
          JSON.stringify({
            session_id: "s",
            avatar_id: "leo",
            bg_id: "studio",
          }),
        );
        assert.equal(opened.status, 201);
        const path = `/v1/render/sessions/${opened.body.id}`;
        const pcm = tone(1, 24000);
        const posted = await call(
          "POST",
          `${path}/audio?sample_rate=24000`,
          new Uint8Array(pcm.buffer as ArrayBuffer),
        );
        assert.equal(posted.status, 204);
        const queued = (await call("GET", path)).body.stats.queuedAudioSamples;
        assert.ok(queued > 40000 && queued <= 48000, `${queued}`);
        assert.equal(
          (await call("POST", `${path}/audio?sample_rate=4`, "xx")).status,
          400,
        );
        assert.equal(
          (await call(
            "POST",
            `${path}/audio?sample_rate=24000&tag=a%20b`,
            "xx",
          ))
            .status,
          400,
        );
        // The cut is answered: nothing of the (untagged) audio was streamed.
        assert.deepEqual(await call("POST", `${path}/interrupt`), {
          status: 200,
          body: { played_ms: 0, was_speaking: false },
        });
        assert.equal(
          (await call("GET", path)).body.stats.queuedAudioSamples,
          0,
        );
        // A turn's end and a caption mark: nothing of "t1" is queued or awaited.
        assert.deepEqual(await call("POST", `${path}/end?tag=t1`), {
          status: 200,
          body: { ended: true },
        });
        assert.equal((await call("POST", `${path}/end?tag=a%20b`)).status, 400);
        assert.equal(
          (await call("POST", `${path}/mark?tag=t1&id=3&offset_ms=250`)).status,
          204,
        );
        assert.equal((await call("POST", `${path}/mark?tag=t1`)).status, 400);
        // Audio past the session's bound is refused whole, never dropped from the queue.
        const minutes = new Int16Array(
          (MAX_AGENT_AUDIO_AHEAD_MS / 1000) * 8000 + 8000,
        );
        const full = await call(
          "POST",
          `${path}/audio?sample_rate=8000`,
          new Uint8Array(minutes.buffer),
        );
        assert.equal(full.status, 507);
        assert.equal(
          (await call("GET", path)).body.stats.queuedAudioSamples,
          0,
        );
        const stopped = await call(
          "DELETE",
          `${path}?graceful=true&timeout_ms=1000`,
        );
        assert.deepEqual(stopped, {
          status: 200,
          body: { clean: true, segments_rendered: 0 },
        });
        assert.equal((await call("GET", path)).status, 404);
      },
    );

    await t.step(
      "the worker refuses requests without the bearer token",
      async () => {
        const res = await fetch(`${worker.url}/v1/render/sessions`, {
          method: "POST",
          body: JSON.stringify({
            session_id: "s",
            avatar_id: "ava",
            bg_id: "studio",
          }),
        });
        assert.equal(res.status, 401);
        await res.body?.cancel();
        const ok = await fetch(`${worker.url}/healthz`);
        assert.equal(ok.status, 200);
        await ok.body?.cancel();
      },
    );

    await t.step(
      "closing the worker stops its sessions and their processes",
      async () => {
        const session = await backend.open(OPEN);
        const sink = new RecordingSink();
        session.attach(sink);
        await sink.until(() => sink.segments.length >= 2);
        assert.equal(liveEncoderPids().length, 1);
        await worker.close();
        await sink.until(() => sink.errors.length === 1);
        assertNoEncoders();
        const r = await session.stop({ graceful: true, timeoutMs: 500 });
        assert.equal(r.clean, false);
      },
    );
  } finally {
    await worker.close();
  }
});

Deno.test("render worker answers 400, not 500, to a stream request that is no valid upgrade", async () => {
  const worker = startWorker();
  try {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const opened = await fetch(`${worker.url}/v1/render/sessions`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        session_id: OPEN.sessionId,
        avatar_id: OPEN.avatarId,
        bg_id: OPEN.bgId,
      }),
    });
    assert.equal(opened.status, 201);
    const { id } = await opened.json();
    // `upgrade: websocket` without Sec-WebSocket-Key: Deno's upgrade throws a TypeError.
    const res = await fetch(`${worker.url}/v1/render/sessions/${id}/stream`, {
      headers: { ...auth, upgrade: "websocket", connection: "upgrade" },
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error, "invalid");
    await fetch(`${worker.url}/v1/render/sessions/${id}`, {
      method: "DELETE",
      headers: auth,
    }).then((r) => r.body?.cancel());
  } finally {
    await worker.close();
  }
});
