import assert from "node:assert/strict";
import { Encoder } from "../../../lib/render/encoder.ts";
import {
  AdtsReader,
  type FlvVideoFrame,
  FlvVideoReader,
} from "../../../lib/render/es_readers.ts";
import { AAC_RATE, ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import {
  AUDIO_WAIT_MS,
  expectedAudioFrames,
  LiveMuxer,
} from "../../../lib/render/muxer.ts";
import { UPSAMPLE_DELAY, Upsampler2x } from "../../../lib/render/upsample.ts";
import { poll } from "./_helpers.ts";

const FORMAT = { width: 64, height: 64, fps: 25, sampleRate: 48000 };
const AAC = { objectType: 2, sampleRateIndex: 0, channels: 1 };

/** Audio end and video start (seconds) of each fragment with a frame, in order. */
function spans(init: Uint8Array, segments: Uint8Array[]) {
  const scales = new Map(
    parseInit(init).tracks.map((t) => [t.trackId, t.timescale]),
  );
  let audioEnd = 0;
  const out: { frame: number; audioEnd: number }[] = [];
  for (const seg of segments) {
    const tracks = parseFragment(seg).tracks;
    const a = tracks.find((t) => t.trackId === 2);
    if (a) audioEnd = (a.baseDecodeTime + a.duration) / scales.get(2)!;
    const v = tracks.find((t) => t.trackId === 1);
    if (v) {
      out.push({ frame: v.baseDecodeTime / scales.get(1)!, audioEnd });
    }
  }
  return out;
}

Deno.test("a frame's fragment leaves before the next frame is written, with the audio of its start", async () => {
  // ffmpeg's own MP4 muxer held each fragment until the next frame reached it: with a
  // frame written and none after it, its fragment never came.
  const init: Uint8Array[] = [];
  const segments: Uint8Array[] = [];
  const enc = new Encoder({ ffmpeg: await ffmpegPath(), ...FORMAT }, {
    onInit: (b) => init.push(b),
    onSegment: (b) => segments.push(b),
    onFailure: (e) => assert.fail(e),
  });
  try {
    for (let n = 0; n < 6; n++) {
      enc.write(
        new Uint8Array(64 * 64 * 3 / 2).fill(40 * n),
        new Uint8Array(3840),
      );
      await poll(() =>
        init.length > 0 && spans(init[0], segments).length === n + 1
      );
    }
    const got = spans(init[0], segments);
    assert.deepEqual(got.map((s) => Math.round(s.frame * 25)), [
      0,
      1,
      2,
      3,
      4,
      5,
    ]);
    for (const s of got) {
      assert.ok(
        s.audioEnd > s.frame,
        `audio to ${s.audioEnd} s with frame at ${s.frame} s`,
      );
    }
  } finally {
    await enc.stop({ graceful: false, timeoutMs: 0 });
  }
});

function muxer() {
  const out = {
    init: [] as Uint8Array[],
    segments: [] as Uint8Array[],
    video: [] as boolean[],
  };
  const mux = new LiveMuxer({
    ...FORMAT,
    audioRate: AAC_RATE,
    audioBitRate: 64000,
    onInit: (b) => out.init.push(b),
    onSegment: (b, video) => (out.segments.push(b), out.video.push(video)),
  });
  mux.onConfig(new Uint8Array([1, 0x42, 0xc0, 0x15, 0xff, 0xe0, 0]));
  return { mux, out };
}

const frameAt = (n: number, key = n === 0): FlvVideoFrame => ({
  data: new Uint8Array([0, 0, 0, 1, n]),
  key,
  timeMs: n * 40,
});

Deno.test("LiveMuxer", async (t) => {
  await t.step(
    "drops the priming frame: audio time 0 is the first input sample",
    () => {
      const { mux, out } = muxer();
      mux.wrote(3840); // 3 blocks in: 2 AAC frames out, the first the priming one
      mux.onAudio(new Uint8Array([9]), AAC);
      mux.onAudio(new Uint8Array([1]), AAC);
      mux.onVideo(frameAt(0));
      assert.equal(out.init.length, 1);
      assert.equal(parseInit(out.init[0]).tracks[1].timescale, AAC_RATE);
      const [frag] = out.segments.map((s) => parseFragment(s).tracks);
      assert.deepEqual(
        frag.map((x) => [x.trackId, x.baseDecodeTime, x.sampleCount]),
        [
          [1, 0, 1],
          [2, 0, 1],
        ],
      );
    },
  );

  await t.step(
    "a frame waits for the AAC its write lets out, at most AUDIO_WAIT_MS",
    async () => {
      const { mux, out } = muxer();
      mux.wrote(3840);
      mux.onAudio(new Uint8Array([9]), AAC);
      mux.onVideo(frameAt(0));
      assert.equal(out.segments.length, 0, "waits for its second AAC frame");
      mux.onAudio(new Uint8Array([1]), AAC);
      assert.equal(out.segments.length, 1, "leaves the moment it comes");
      mux.wrote(3840); // 7 blocks: 6 AAC frames expected in all
      mux.onVideo(frameAt(1));
      assert.equal(out.segments.length, 1);
      await poll(() => out.segments.length === 2, AUDIO_WAIT_MS * 20);
      const late = [2, 3, 4, 5].map((i) => new Uint8Array([i]));
      for (const a of late) mux.onAudio(a, AAC);
      mux.wrote(3840);
      mux.onVideo(frameAt(2));
      mux.end(); // the encoder's outputs ended: what waits leaves
      // The late AAC rode with the next frame; the audio timeline has no hole.
      const audio = out.segments.map((s) =>
        parseFragment(s).tracks.find((x) => x.trackId === 2)
      );
      assert.deepEqual(
        audio.map((a) => a && [a.baseDecodeTime, a.sampleCount]),
        [
          [0, 1],
          undefined,
          [1024, 4],
        ],
      );
    },
  );

  await t.step("a keyframe fragment starts both tracks at the frame", () => {
    const { mux, out } = muxer();
    for (let n = 0; n < 26; n++) mux.wrote(3840);
    mux.onAudio(new Uint8Array([9]), AAC);
    for (let n = 0; n < 25; n++) mux.onVideo(frameAt(n));
    // Audio to 1.02 s, then the keyframe at 1.00 s.
    for (let i = 0; i < 96; i++) mux.onAudio(new Uint8Array([i]), AAC);
    mux.onVideo(frameAt(25, true));
    mux.close();
    const last = out.segments.slice(-2).map((s) => parseFragment(s).tracks);
    assert.deepEqual(
      last[0].map((x) => x.trackId),
      [2],
      "audio before the key alone",
    );
    // Told apart from the frames' fragments (a writer pacing itself on fragments out
    // counted it as a frame: bench/_lipsync_lib.ts).
    assert.deepEqual(out.video.slice(-2), [false, true]);
    assert.equal(out.video.filter((v) => v).length, 26);
    const [video, audio] = last[1];
    assert.equal(video.baseDecodeTime, 25 * 512);
    assert.equal(video.firstSampleSync, true);
    assert.ok(audio.baseDecodeTime >= AAC_RATE, "audio from the keyframe on");
    assert.ok(audio.baseDecodeTime < AAC_RATE + 1024);
  });
});

const OPUS_HEAD = {
  channels: 1,
  preSkip: 120,
  inputRate: 48000,
  outputGain: 0,
  mappingFamily: 0,
};
/** An Opus packet of 20 ms (TOC config 31: CELT fullband 20 ms, one frame). */
const opus = (n: number) => new Uint8Array([31 << 3, n]);

function opusMuxer() {
  const out = { init: [] as Uint8Array[], segments: [] as Uint8Array[] };
  const mux = new LiveMuxer({
    ...FORMAT,
    audioCodec: "opus",
    audioRate: 48000,
    audioBitRate: 48000,
    onInit: (b) => out.init.push(b),
    onSegment: (b) => out.segments.push(b),
  });
  mux.onConfig(new Uint8Array([1, 0x42, 0xc0, 0x15, 0xff, 0xe0, 0]));
  return { mux, out };
}

const audioOf = (segments: Uint8Array[]) =>
  segments.map((s) => {
    const a = parseFragment(s).tracks.find((x) => x.trackId === 2);
    return a && [a.baseDecodeTime, a.sampleCount, a.duration];
  });

Deno.test("LiveMuxer with Opus", async (t) => {
  await t.step("expects floor(floor(w / 1024) * 1024 / 960) packets", () => {
    // ffmpeg hands libopus 1024-sample blocks; each whole 960 is a packet at once.
    assert.deepEqual(
      [1920, 3840, 5760, 7680, 15360, 17280].map((w) =>
        expectedAudioFrames("opus", w)
      ),
      [1, 3, 5, 7, 16, 17],
    );
    // AAC as before: one 1024-sample frame held back.
    assert.deepEqual(
      [3840, 7680].map((w) => expectedAudioFrames("aac", w)),
      [2, 6],
    );
  });

  await t.step(
    "drops nothing: the first packet is audio time 0, 960 samples each",
    () => {
      const { mux, out } = opusMuxer();
      mux.wrote(1920);
      mux.onOpusHead(OPUS_HEAD);
      assert.equal(out.init.length, 1, "the header is enough for the init");
      const info = parseInit(out.init[0]);
      assert.equal(info.mime, 'video/mp4; codecs="avc1.42c015, opus"');
      assert.equal(info.tracks[1].timescale, 48000);
      mux.onOpusPacket(opus(0));
      mux.onVideo(frameAt(0));
      assert.deepEqual(audioOf(out.segments), [[0, 1, 960]]);
    },
  );

  await t.step(
    "a frame waits for the packets its write lets out, at most AUDIO_WAIT_MS",
    async () => {
      const { mux, out } = opusMuxer();
      mux.onOpusHead(OPUS_HEAD);
      mux.wrote(1920);
      mux.onVideo(frameAt(0));
      assert.equal(out.segments.length, 0, "waits for its packet");
      mux.onOpusPacket(opus(0));
      assert.equal(out.segments.length, 1, "leaves the moment it comes");
      mux.wrote(1920); // 3 packets in all
      mux.onOpusPacket(opus(1));
      mux.onVideo(frameAt(1));
      assert.equal(out.segments.length, 1, "one packet short");
      mux.onOpusPacket(opus(2));
      assert.equal(out.segments.length, 2);
      mux.wrote(1920); // 5 in all; they come late
      mux.onVideo(frameAt(2));
      await poll(() => out.segments.length === 3, AUDIO_WAIT_MS * 20);
      for (const n of [3, 4]) mux.onOpusPacket(opus(n));
      mux.end();
      // The late packets left at the end; the timeline has no hole.
      assert.deepEqual(audioOf(out.segments), [
        [0, 1, 960],
        [960, 2, 1920],
        undefined,
        [2880, 2, 1920],
      ]);
    },
  );

  await t.step("refuses packets that are not 20 ms, and AAC", () => {
    const { mux } = opusMuxer();
    assert.throws(() => mux.onOpusPacket(opus(0)), /without an Opus header/);
    mux.onOpusHead(OPUS_HEAD);
    // TOC config 30: CELT fullband 10 ms.
    assert.throws(
      () => mux.onOpusPacket(new Uint8Array([30 << 3, 0])),
      /20-ms Opus packets/,
    );
    assert.throws(
      () => mux.onAudio(new Uint8Array([1]), AAC),
      /AAC from an Opus/,
    );
    assert.throws(() => muxer().mux.onOpusHead(OPUS_HEAD), /Opus from an AAC/);
  });
});

Deno.test("FlvVideoReader and AdtsReader give the same units however the bytes are cut", () => {
  const tag = (type: number, body: number[], ms: number) => [
    type,
    0,
    0,
    body.length,
    (ms >> 16) & 0xff,
    (ms >> 8) & 0xff,
    ms & 0xff,
    0,
    0,
    0,
    0,
    ...body,
    0,
    0,
    0,
    body.length + 11,
  ];
  const flv = new Uint8Array([
    0x46,
    0x4c,
    0x56,
    1,
    1,
    0,
    0,
    0,
    9,
    0,
    0,
    0,
    0,
    ...tag(18, [2, 0], 0),
    ...tag(9, [0x17, 0, 0, 0, 0, 1, 0x42, 0xc0], 0),
    ...tag(9, [0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65], 0),
    ...tag(9, [0x27, 1, 0, 0, 0, 0, 0, 0, 1, 0x41], 40),
  ]);
  const adtsFrame = (payload: number[]) => {
    const len = 7 + payload.length;
    return [
      0xff,
      0xf1,
      0x40 | (0 << 2),
      0x40 | (len >> 11),
      (len >> 3) & 0xff,
      ((len & 7) << 5) | 0x1f,
      0xfc,
      ...payload,
    ];
  };
  const adts = new Uint8Array([...adtsFrame([1, 2, 3]), ...adtsFrame([4])]);
  for (const size of [1, 3, 1000]) {
    const got: unknown[] = [];
    const r = new FlvVideoReader({
      onConfig: (c) => got.push(["config", [...c]]),
      onFrame: (f) => got.push([f.key, f.timeMs, [...f.data]]),
    });
    const a = new AdtsReader((f, fmt) =>
      got.push([[...f], fmt.sampleRateIndex, fmt.channels])
    );
    for (let at = 0; at < flv.length; at += size) {
      r.push(flv.subarray(at, at + size));
    }
    for (let at = 0; at < adts.length; at += size) {
      a.push(adts.subarray(at, at + size));
    }
    assert.deepEqual(got, [
      ["config", [1, 0x42, 0xc0]],
      [true, 0, [0, 0, 0, 1, 0x65]],
      [false, 40, [0, 0, 0, 1, 0x41]],
      [[1, 2, 3], 0, 1],
      [[4], 0, 1],
    ]);
  }
  assert.throws(
    () =>
      new FlvVideoReader({ onConfig() {}, onFrame() {} }).push(
        new Uint8Array(13),
      ),
    /not FLV/,
  );
  assert.throws(
    () => new AdtsReader(() => {}).push(new Uint8Array(9)),
    /not ADTS/,
  );
});

Deno.test("Upsampler2x keeps a tone and its timing, whatever the chunks", () => {
  const n = 4800;
  const tone = new Int16Array(n).map((_, i) =>
    Math.round(Math.sin(2 * Math.PI * 1000 * i / 48000) * 10000)
  );
  const whole = new Upsampler2x().process(tone);
  const split = new Upsampler2x();
  const parts = [
    tone.subarray(0, 7),
    tone.subarray(7, 1920),
    tone.subarray(1920),
  ].map((p) => split.process(p));
  assert.deepEqual(Int16Array.from(parts.flatMap((p) => [...p])), whole);
  assert.equal(whole.length, 2 * n);
  let err = 0;
  for (let j = 200; j < 2 * n; j++) {
    const want =
      Math.sin(2 * Math.PI * 1000 * (j / 2 - UPSAMPLE_DELAY) / 48000) * 10000;
    err = Math.max(err, Math.abs(whole[j] - want));
  }
  assert.ok(err < 30, `max error ${err} of 10000`);
});
