/**
 * The audio output worklet's jitter buffer (client/webcodecs/audio_out.ts), run as the
 * browser runs it: its module source evaluated with the AudioWorkletGlobalScope names it
 * uses (`AudioWorkletProcessor`, `registerProcessor`, `sampleRate`, `currentFrame`),
 * driven quantum by quantum.
 */
import assert from "node:assert/strict";
import { AUDIO_OUT_SOURCE } from "../../../client/webcodecs/audio_out.ts";

const RATE = 48000;
const QUANTUM = 128;
const AAC = 1024;

interface Processor {
  port: { onmessage: ((e: { data: unknown }) => void) | null };
  process(inputs: unknown[], outputs: Float32Array[][]): boolean;
}

/** A fresh processor, what it posts, and a clock of rendered frames. */
function processor(start = AAC) {
  const posted: Array<Record<string, number | boolean>> = [];
  const scope = { frame: 0 };
  let ctor: (new () => Processor) | null = null;
  class Base {
    port = {
      onmessage: null as ((e: { data: unknown }) => void) | null,
      postMessage: (m: Record<string, number | boolean>) => posted.push(m),
    };
  }
  new Function(
    "AudioWorkletProcessor",
    "registerProcessor",
    "sampleRate",
    "scope",
    AUDIO_OUT_SOURCE.replaceAll("currentFrame", "scope.frame"),
  )(
    Base,
    (_: string, c: new () => Processor) => ctor = c,
    RATE,
    scope,
  );
  const p = new ctor!();
  const send = (data: unknown) => p.port.onmessage!({ data });
  send({
    reset: true,
    startSamples: start,
    stepSamples: AAC,
    marginSamples: AAC,
    maxSamples: 10 * AAC,
    slackSamples: RATE * 0.15,
  });
  let pts = 0;
  return {
    posted,
    /** Queues `n` samples of the value 0.5 (the next ones on the timeline). */
    push(n: number) {
      send({ pcm: new Float32Array(n).fill(0.5), ptsUs: pts });
      pts += n * 1e6 / RATE;
    },
    /** Renders `n` quanta; returns the samples that were not silence. */
    render(n: number): number {
      let sound = 0;
      for (let i = 0; i < n; i++) {
        const out = [[new Float32Array(QUANTUM)]];
        p.process([], out);
        scope.frame += QUANTUM;
        sound += out[0][0].filter((x) => x !== 0).length;
      }
      return sound;
    },
    clock: () => posted.filter((m) => "clock" in m).at(-1)!,
    underruns: () => posted.filter((m) => m.underrun).length,
    jumps: () => posted.filter((m) => "jumped" in m).length,
  };
}

Deno.test("audio out starts once one AAC frame is queued and plays it in order", () => {
  const w = processor();
  w.push(AAC / 2);
  assert.equal(w.render(2), 0, "silent below the start target");
  w.push(AAC / 2);
  assert.equal(w.render(9), AAC, "plays the whole frame");
  assert.equal(w.clock().playing, false, "stopped at the underrun");
});

Deno.test("audio out grows its target by a frame on each underrun", () => {
  const w = processor();
  w.push(AAC);
  w.render(9);
  assert.equal(w.underruns(), 1);
  assert.equal(w.posted.find((m) => m.underrun)!.target, 2 * AAC);
  // After the underrun it waits for two frames before playing again.
  w.push(AAC);
  assert.equal(w.render(4), 0);
  w.push(AAC);
  assert.ok(w.render(4) > 0);
});

Deno.test("audio out drops a burst past its slack: playback jumps to the live edge", () => {
  const w = processor();
  // A takeover's GOP burst: a second of audio at once.
  for (let i = 0; i < RATE / AAC; i++) w.push(AAC);
  assert.equal(w.jumps() > 0, true);
  w.render(1);
  const heard = w.clock().clock as number;
  // What plays now is within the target of the newest audio, not a second behind it.
  const newest = Math.floor(RATE / AAC) * AAC * 1e6 / RATE;
  assert.ok(
    newest - heard <= (AAC + 0.15 * RATE) * 1e6 / RATE,
    `${newest - heard} µs behind`,
  );
});

Deno.test("audio out trims a backlog that no jitter used for half a second", () => {
  const w = processor();
  // Start with 100 ms queued (under the 150-ms slack), then keep pace with playback.
  w.push(RATE / 10);
  let behindAtStart = 0;
  for (let q = 0; q < 400; q++) {
    if (q % 8 === 0) w.push(8 * QUANTUM);
    w.render(1);
    if (q === 1) behindAtStart = w.jumps();
  }
  assert.equal(behindAtStart, 0);
  assert.ok(w.jumps() >= 1, "the unused backlog was trimmed");
  assert.equal(w.underruns(), 0);
});

Deno.test("audio out that comes a video frame at a time is heard one AAC frame past its jitter", () => {
  // A fragment (40 ms, 1920 samples) every 15 quanta, two at first (audio decoded
  // while the output opened); playback starts at one fragment.
  const FRAME = 1920;
  const w = processor(FRAME);
  w.push(FRAME);
  let floor = Infinity;
  for (let q = 0; q < 15 * 75; q++) {
    if (q % 15 === 0) w.push(FRAME);
    w.render(1);
    const c = w.clock();
    if (q >= 15 * 50 && c.playing) floor = Math.min(floor, c.queued as number);
  }
  assert.equal(w.underruns(), 0);
  // The queue's low point is kept at the margin, not at the start target.
  assert.ok(floor <= AAC + AAC / 2, `queue fell only to ${floor}`);
});
