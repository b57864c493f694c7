import assert from "node:assert/strict";
import {
  analyzeVoice,
  AudioQueue,
  MAX_AGENT_AUDIO_AHEAD_MS,
  Resampler,
} from "../../../lib/render/voice.ts";
import { tone } from "./_helpers.ts";

Deno.test("Resampler", async (t) => {
  await t.step(
    "24 kHz to 48 kHz doubles the samples, continuously across chunks",
    () => {
      const r = new Resampler(48000);
      const src = tone(1, 24000, 300);
      let n = 0;
      let maxStep = 0;
      let prev: number | undefined;
      for (let at = 0; at < src.length; at += 480) {
        const out = r.process(src.subarray(at, at + 480), 24000);
        n += out.length;
        for (const s of out) {
          if (prev !== undefined) {
            maxStep = Math.max(maxStep, Math.abs(s - prev));
          }
          prev = s;
        }
      }
      assert.ok(Math.abs(n - 48000) <= 2, `${n}`);
      // A 300 Hz tone at 20000 moves at most ~790 per 48-kHz sample: no seams.
      assert.ok(maxStep < 900, `step ${maxStep}`);
    },
  );

  await t.step("the stream rate passes through unchanged", () => {
    const src = tone(0.01, 48000);
    assert.deepEqual(new Resampler(48000).process(src, 48000), src);
  });
});

Deno.test("AudioQueue", async (t) => {
  await t.step(
    "refuses a push past its bound whole and never drops what it holds",
    () => {
      const q = new AudioQueue(100);
      assert.equal(q.push(Int16Array.from({ length: 80 }, (_, i) => i)), true);
      assert.equal(
        q.push(Int16Array.from({ length: 50 }, (_, i) => 80 + i)),
        false,
      );
      assert.equal(q.length, 80);
      assert.equal(q.refused, 50);
      assert.equal(q.push(new Int16Array(20).fill(7)), true);
      const { samples, real } = q.take(120);
      assert.equal(real, 100);
      assert.equal(samples[0], 0);
      assert.equal(samples[79], 79);
      assert.equal(samples[80], 7);
      assert.equal(samples[100], 0);
    },
  );

  await t.step("holds minutes of audio by default", () => {
    const q = new AudioQueue();
    assert.equal(q.maxSamples, MAX_AGENT_AUDIO_AHEAD_MS * 48);
    assert.ok(MAX_AGENT_AUDIO_AHEAD_MS >= 60_000);
    assert.equal(q.push(new Int16Array(30 * 48000)), true);
  });

  await t.step("take() pads with silence and clear() empties", () => {
    const q = new AudioQueue(100);
    q.push(new Int16Array([5, 6]));
    assert.deepEqual([...q.take(3).samples], [5, 6, 0]);
    q.push(new Int16Array(10));
    assert.equal(q.clear(), 10);
    assert.equal(q.take(4).real, 0);
  });

  await t.step("peek() copies what take() would give, taking nothing", () => {
    const q = new AudioQueue();
    q.push(Int16Array.from([1, 2, 3]));
    q.push(Int16Array.from([4, 5]));
    const out = new Int16Array(4);
    assert.equal(q.peek(out), 4);
    assert.deepEqual([...out], [1, 2, 3, 4]);
    assert.equal(q.length, 5);
    assert.deepEqual([...q.take(4).samples], [1, 2, 3, 4]);
    assert.equal(q.peek(out), 1);
    assert.equal(out[0], 5);
  });
});

Deno.test("analyzeVoice() measures level and zero crossings", () => {
  const quiet = analyzeVoice(new Int16Array(1920));
  assert.deepEqual(quiet, { rms: 0, zcr: 0 });
  const low = analyzeVoice(tone(0.04, 48000, 150));
  const high = analyzeVoice(tone(0.04, 48000, 4000));
  assert.ok(low.rms > 0.1, `rms ${low.rms}`);
  assert.ok(high.zcr > low.zcr * 10, `${high.zcr} vs ${low.zcr}`);
});
