import assert from "node:assert/strict";
import {
  floatToPcm16,
  int16ToLeBytes,
  PCM_WORKLET_PROCESSOR,
  PCM_WORKLET_SOURCE,
  PcmFramer,
  Resampler,
} from "../../client/pcm-worklet.ts";

function sine(freq: number, rate: number, n: number, amp = 0.5): Float32Array {
  return Float32Array.from(
    { length: n },
    (_, i) => amp * Math.sin(2 * Math.PI * freq * i / rate),
  );
}

function zeroCrossings(x: ArrayLike<number>): number {
  let n = 0;
  for (let i = 1; i < x.length; i++) if ((x[i - 1] < 0) !== (x[i] < 0)) n++;
  return n;
}

function blocks(x: Float32Array, size: number): Float32Array[] {
  const out: Float32Array[] = [];
  for (let i = 0; i < x.length; i += size) out.push(x.slice(i, i + size));
  return out;
}

Deno.test("floatToPcm16() maps [-1, 1] to int16 and clamps", () => {
  assert.equal(floatToPcm16(0), 0);
  assert.equal(floatToPcm16(1), 32767);
  assert.equal(floatToPcm16(-1), -32768);
  assert.equal(floatToPcm16(2), 32767);
  assert.equal(floatToPcm16(-3), -32768);
  assert.equal(floatToPcm16(0.5), 16384);
});

Deno.test("int16ToLeBytes() writes little-endian", () => {
  assert.deepEqual(
    [...int16ToLeBytes(Int16Array.from([0x0102, -2]))],
    [0x02, 0x01, 0xfe, 0xff],
  );
});

Deno.test("Resampler keeps the pitch and the sample count at every common rate", async (t) => {
  for (const inRate of [16000, 44100, 48000, 96000]) {
    await t.step(`${inRate} → 24000`, () => {
      const r = new Resampler(inRate, 24000);
      const input = sine(440, inRate, inRate); // one second
      const out: number[] = [];
      for (const b of blocks(input, 128)) out.push(...r.process(b));
      // One second in → one second out (± the sample or two still held back).
      assert.ok(Math.abs(out.length - 24000) <= 2, String(out.length));
      // 440 Hz → 880 zero crossings a second.
      assert.ok(
        Math.abs(zeroCrossings(out) - 880) <= 2,
        String(zeroCrossings(out)),
      );
    });
  }
});

Deno.test("Resampler output does not depend on how the input is cut into blocks", () => {
  const input = sine(300, 48000, 9600);
  const whole = [...new Resampler(48000, 24000).process(input)];
  const r = new Resampler(48000, 24000);
  const pieces: number[] = [];
  for (const b of blocks(input, 37)) pieces.push(...r.process(b));
  assert.equal(pieces.length, whole.length);
  pieces.forEach((v, i) =>
    assert.ok(Math.abs(v - whole[i]) < 1e-6, `sample ${i}`)
  );
});

Deno.test("PcmFramer emits 20 ms PCM16LE frames at the declared rate", () => {
  const f = new PcmFramer(48000, 24000, 20);
  assert.equal(f.frameSamples, 480);
  const frames: Uint8Array[] = [];
  for (const b of blocks(sine(440, 48000, 48000), 960)) {
    frames.push(...f.push(b));
  }
  assert.equal(frames.length, 50);
  assert.ok(frames.every((x) => x.byteLength === 960));
  // Little-endian samples of a 440 Hz tone at half scale.
  const view = new DataView(frames[10].buffer);
  let peak = 0;
  for (let i = 0; i < 480; i++) {
    peak = Math.max(peak, Math.abs(view.getInt16(i * 2, true)));
  }
  assert.ok(peak > 15000 && peak <= 16384, String(peak));
});

Deno.test("PCM_WORKLET_SOURCE registers the processor the client loads", () => {
  const registered: string[] = [];
  class AudioWorkletProcessor {
    port = { postMessage: () => {} };
  }
  new Function(
    "AudioWorkletProcessor",
    "registerProcessor",
    PCM_WORKLET_SOURCE,
  )(
    AudioWorkletProcessor,
    (
      name: string,
      ctor: new (o: unknown) => { process(i: Float32Array[][]): boolean },
    ) => {
      registered.push(name);
      // The processor mixes down to mono and posts blocks of chunkSamples.
      const posted: Float32Array[] = [];
      const p = new ctor({
        processorOptions: { chunkSamples: 256 },
      }) as unknown as {
        port: { postMessage: (d: Float32Array) => void };
        process(i: Float32Array[][]): boolean;
      };
      p.port.postMessage = (d) => posted.push(d);
      const left = new Float32Array(128).fill(0.5);
      const right = new Float32Array(128).fill(-0.25);
      assert.equal(p.process([[left, right]]), true);
      assert.equal(posted.length, 0);
      p.process([[left, right]]);
      assert.equal(posted.length, 1);
      assert.equal(posted[0].length, 256);
      assert.equal(posted[0][0], 0.125);
    },
  );
  assert.deepEqual(registered, [PCM_WORKLET_PROCESSOR]);
});
