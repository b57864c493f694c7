import assert from "node:assert/strict";
import {
  base64ToPcm,
  bytesToPcm,
  pcmToBase64,
  pcmToBytes,
  Resampler,
  StreamResampler,
} from "../../../lib/providers/resample.ts";

function sine(n: number, rate: number, hz: number, offset = 0): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = Math.round(
      10000 * Math.sin((2 * Math.PI * hz * (i + offset)) / rate),
    );
  }
  return out;
}

function rms(x: Int16Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / x.length);
}

Deno.test("Resampler keeps the sample count across chunks", async (t) => {
  for (
    const [from, to] of [[48000, 24000], [16000, 24000], [44100, 16000], [
      8000,
      48000,
    ]]
  ) {
    await t.step(`${from} → ${to}`, () => {
      const r = new Resampler(from, to);
      let total = 0;
      const chunk = Math.round(from / 50);
      for (let i = 0; i < 50; i++) {
        total += r.push(sine(chunk, from, 440, i * chunk)).length;
      }
      const expected = (chunk * 50 * to) / from;
      // Lags by less than one input interval: the last one awaits the next chunk.
      assert.ok(
        total <= expected && expected - total <= Math.ceil(to / from),
        `${total} vs ${expected}`,
      );
    });
  }
});

Deno.test("Resampler is continuous at chunk borders", () => {
  // 440 Hz at 16 kHz → 24 kHz in odd-sized chunks equals one big push.
  const input = sine(1601, 16000, 440);
  const whole = new Resampler(16000, 24000).push(input);
  const r = new Resampler(16000, 24000);
  const parts: number[] = [];
  for (let i = 0; i < input.length; i += 37) {
    parts.push(...r.push(input.subarray(i, i + 37)));
  }
  assert.equal(parts.length, whole.length);
  for (let i = 0; i < whole.length; i++) {
    assert.ok(Math.abs(parts[i] - whole[i]) <= 1);
  }
});

Deno.test("Resampler low-passes before downsampling (no aliasing)", () => {
  // 15 kHz at 48 kHz is above the 8 kHz Nyquist of 16 kHz: it must mostly vanish.
  const out = new Resampler(48000, 16000).push(sine(4800, 48000, 15000));
  assert.ok(rms(out.subarray(50)) < 500, `rms ${rms(out)}`);
  const pass = new Resampler(48000, 16000).push(sine(4800, 48000, 1000));
  assert.ok(rms(pass.subarray(50)) > 6000);
});

Deno.test("StreamResampler passes the target rate through and restarts on a rate change", () => {
  const s = new StreamResampler(24000);
  const x = sine(480, 24000, 440);
  assert.equal(s.push(x, 24000), x);
  assert.equal(s.push(sine(960, 48000, 440), 48000).length, 480);
  assert.equal(s.push(sine(320, 16000, 440), 16000).length, 479);
});

Deno.test("PCM helpers round-trip little-endian bytes and base64", () => {
  const x = Int16Array.from([0, 1, -1, 32767, -32768, 1234]);
  assert.deepEqual(pcmToBytes(x).subarray(0, 4), Uint8Array.from([0, 0, 1, 0]));
  assert.deepEqual(bytesToPcm(pcmToBytes(x)), x);
  assert.deepEqual(base64ToPcm(pcmToBase64(x)), x);
  assert.equal(bytesToPcm(new Uint8Array(5)).length, 2);
});
