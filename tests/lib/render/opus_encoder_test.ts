/**
 * The fMP4 encoder with Opus audio, end to end with the real ffmpeg: what it sends, when
 * each frame's fragment leaves, and that ffmpeg itself reads the result as Opus in MP4.
 */
import assert from "node:assert/strict";
import {
  type Fmp4Track,
  parseMediaSegment,
} from "../../../client/webcodecs/fmp4.ts";
import { Encoder } from "../../../lib/render/encoder.ts";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { parseBoxes, path } from "../../../lib/render/mp4_boxes.ts";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import {
  AUDIO_WAIT_MS,
  expectedAudioFrames,
} from "../../../lib/render/muxer.ts";
import { opusPacketSamples } from "../../../lib/render/nut_opus.ts";
import { poll } from "./_helpers.ts";
import { ffmpeg } from "../../../scripts/lipsync/decode.ts";

const FORMAT = { width: 64, height: 64, fps: 25, sampleRate: 48000 };
const FRAMES = 50; // 2 s
const PER_FRAME = 1920;
/** The tone: 440 Hz from 0.5 s on, silence before it. */
const TONE_HZ = 440;
const TONE_FROM = 24000;
const TONE_LEVEL = 8000;

function pcmFor(n: number): Uint8Array {
  const pcm = new Int16Array(PER_FRAME).map((_, i) => {
    const k = n * PER_FRAME + i;
    return k < TONE_FROM
      ? 0
      : Math.round(TONE_LEVEL * Math.sin(2 * Math.PI * TONE_HZ * k / 48000));
  });
  return new Uint8Array(pcm.buffer);
}

function frameFor(n: number): Uint8Array {
  return new Uint8Array(64 * 64 * 3 / 2).map((_, i) => (i * 3 + n * 11) & 0xff);
}

interface Run {
  init: Uint8Array;
  segments: Uint8Array[];
  /** Per frame: audio packets sent up to its fragment, and ms from write to it. */
  frames: { audio: number; ms: number }[];
}

/** Feeds the same 2 s of frames and tone to an AAC and an Opus encoder in real time. */
async function encodeBoth(): Promise<{ aac: Run; opus: Run }> {
  const bin = await ffmpegPath();
  const start = (audio: "aac" | "opus") => {
    const run: Run = { init: new Uint8Array(0), segments: [], frames: [] };
    let audioCount = 0;
    let writtenAt = 0;
    const enc = new Encoder({ ffmpeg: bin, ...FORMAT, audio }, {
      onInit: (b) => (run.init = b),
      onSegment: (b) => {
        run.segments.push(b);
        const tracks = parseFragment(b).tracks;
        audioCount += tracks.find((t) => t.trackId === 2)?.sampleCount ?? 0;
        if (tracks.some((t) => t.trackId === 1)) {
          run.frames.push({
            audio: audioCount,
            ms: performance.now() - writtenAt,
          });
        }
      },
      onFailure: (e) => assert.fail(e),
    });
    return {
      run,
      enc,
      write(n: number) {
        writtenAt = performance.now();
        enc.write(frameFor(n), pcmFor(n));
      },
    };
  };
  const aac = start("aac");
  const opus = start("opus");
  try {
    for (let n = 0; n < FRAMES; n++) {
      aac.write(n);
      opus.write(n);
      await poll(() =>
        aac.run.frames.length === n + 1 && opus.run.frames.length === n + 1
      );
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await Promise.all([
      aac.enc.stop({ graceful: true, timeoutMs: 5000 }),
      opus.enc.stop({ graceful: true, timeoutMs: 5000 }),
    ]);
  }
  return { aac: aac.run, opus: opus.run };
}

let encoded: Promise<{ aac: Run; opus: Run }> | null = null;
const both = () => (encoded ??= encodeBoth());

function track(id: number, timescale: number): Fmp4Track {
  return {
    trackId: id,
    kind: id === 1 ? "video" : "audio",
    timescale,
    codec: "",
    description: new Uint8Array(0),
    width: 0,
    height: 0,
    sampleRate: 0,
    channels: 0,
    startOffset: 0,
    defaults: { duration: 0, size: 0, flags: 0 },
  };
}

Deno.test("an Opus encoder sends Opus+dOps, 960-sample packets on the input's timeline, the same video", async () => {
  const { aac, opus } = await both();
  const info = parseInit(opus.init);
  assert.match(info.mime, /^video\/mp4; codecs="avc1\.42c0[0-9a-f]{2}, opus"$/);
  const moov = parseBoxes(opus.init).find((b) => b.type === "moov")!;
  const trak = parseBoxes(opus.init, moov.bodyStart, moov.end)
    .filter((b) => b.type === "trak")[1];
  const stsd = path(opus.init, trak, ["mdia", "minf", "stbl", "stsd"])!;
  const [entry] = parseBoxes(opus.init, stsd.bodyStart + 8, stsd.end);
  assert.equal(entry.type, "Opus");
  const [dOps] = parseBoxes(opus.init, entry.bodyStart + 28, entry.end);
  assert.equal(dOps.type, "dOps");
  // Version 0, mono, pre-skip 120 (libopus low-delay), input 48 kHz, no gain, family 0.
  assert.deepEqual(
    [...opus.init.subarray(dOps.bodyStart, dOps.end)],
    [0, 1, 0, 120, 0, 0, 0xbb, 0x80, 0, 0, 0],
  );

  // Audio: every sample a 20-ms packet; the timeline from 0 without a hole, covering
  // the input (after the pre-skip) to within a packet.
  const audio = opus.segments.flatMap((s) =>
    parseMediaSegment(s, [track(2, 48000)])
  );
  let end = 0;
  for (const s of audio) {
    assert.equal(s.durationUs, 20000);
    assert.equal(opusPacketSamples(s.data), 960);
    assert.equal(s.ptsUs, end);
    end += s.durationUs;
  }
  const covered = audio.length * 960 - 120;
  const input = FRAMES * PER_FRAME;
  assert.ok(
    covered >= input && covered < input + 960,
    `${covered} samples for ${input}`,
  );

  // Each frame carried the packets its own write let out: exactly so when its
  // fragment left before the muxer's fallback could have fired, never more.
  let exact = 0;
  opus.frames.forEach((f, n) => {
    const want = expectedAudioFrames("opus", (n + 1) * PER_FRAME);
    assert.ok(f.audio <= want, `frame ${n}: ${f.audio} packets of ${want}`);
    if (f.ms < AUDIO_WAIT_MS) {
      assert.equal(f.audio, want, `frame ${n} (${f.ms.toFixed(1)} ms)`);
      exact++;
    }
  });
  assert.ok(exact >= 10, `${exact} frames left within ${AUDIO_WAIT_MS} ms`);

  // The video is the AAC stream's, sample for sample.
  const video = (run: Run) =>
    run.segments.flatMap((s) => parseMediaSegment(s, [track(1, 12800)]))
      .map((s) => ({ pts: s.ptsUs, key: s.key, data: s.data }));
  assert.equal(video(opus).length, FRAMES);
  assert.deepEqual(video(opus), video(aac));
  assert.equal(
    info.tracks[0].codec,
    parseInit(aac.init).tracks[0].codec,
  );
});

Deno.test("ffmpeg reads the Opus stream as Opus in MP4 and hears the tone where it was", async () => {
  const { opus } = await both();
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/opus.mp4`;
    const all = [opus.init, ...opus.segments];
    const bytes = new Uint8Array(all.reduce((n, b) => n + b.length, 0));
    all.reduce((at, b) => (bytes.set(b, at), at + b.length), 0);
    await Deno.writeFile(file, bytes);
    const { out, err: log } = await ffmpeg([
      "-i",
      file,
      "-map",
      "0:a",
      "-f",
      "s16le",
      "-ac",
      "1",
      "-ar",
      "48000",
      "pipe:1",
    ]);
    assert.match(log, /Audio: opus \(Opus \/ 0x7375704F\), 48000 Hz, mono/);
    assert.doesNotMatch(log, /error|invalid/i);
    const pcm = new Int16Array(out.buffer, out.byteOffset, out.length >> 1);
    // The decoder dropped the pre-skip: one sample out per input sample, plus the
    // encoder's last packet's padding.
    assert.ok(pcm.length >= FRAMES * PER_FRAME, `${pcm.length} samples`);
    assert.ok(pcm.length < FRAMES * PER_FRAME + 960, `${pcm.length} samples`);
    // Silence, then the tone from 0.5 s on, to the sample's few (as written).
    let peakBefore = 0;
    for (let i = 0; i < TONE_FROM - 48; i++) {
      peakBefore = Math.max(peakBefore, Math.abs(pcm[i]));
    }
    assert.ok(peakBefore < 200, `${peakBefore} before the tone`);
    const onset = pcm.findIndex((v) => Math.abs(v) > TONE_LEVEL / 4);
    assert.ok(Math.abs(onset - TONE_FROM) <= 48, `tone from sample ${onset}`);
    // The tone itself: its 440-Hz component at the level written, little else.
    const from = TONE_FROM + 4800;
    const to = FRAMES * PER_FRAME - 4800;
    let re = 0, im = 0, energy = 0;
    for (let i = from; i < to; i++) {
      const w = 2 * Math.PI * TONE_HZ * i / 48000;
      re += pcm[i] * Math.cos(w);
      im += pcm[i] * Math.sin(w);
      energy += pcm[i] * pcm[i];
    }
    const n = to - from;
    const level = 2 * Math.hypot(re, im) / n;
    assert.ok(
      Math.abs(level - TONE_LEVEL) < TONE_LEVEL * 0.1,
      `level ${level}`,
    );
    const toneEnergy = level * level / 2 * n;
    const snr = 10 * Math.log10(toneEnergy / Math.max(1, energy - toneEnergy));
    assert.ok(snr > 20, `SNR ${snr.toFixed(1)} dB`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
