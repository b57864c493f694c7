/**
 * The audio output worklet's jitter buffer (client/webcodecs/audio_out.ts), run as the
 * browser runs it: its module source evaluated with the AudioWorkletGlobalScope names it
 * uses (`AudioWorkletProcessor`, `registerProcessor`, `sampleRate`, `currentFrame`),
 * driven quantum by quantum.
 */
import assert from "node:assert/strict";
import {
  AUDIO_OUT_SOURCE,
  CAP_S,
} from "../../../client/webcodecs/audio_out.ts";

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
    /**
     * Queues `n` samples of `value` (the next ones on the timeline): 0.5 is speech,
     * 0 the idle avatar's silence.
     */
    push(n: number, value = 0.5) {
      send({ pcm: new Float32Array(n).fill(value), ptsUs: pts });
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

Deno.test("audio out drops a burst of silence past its slack: playback jumps to the live edge", () => {
  const w = processor();
  // A takeover's GOP burst while the avatar is quiet: a second of audio at once.
  for (let i = 0; i < RATE / AAC; i++) w.push(AAC, 0);
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

Deno.test("audio out keeps speech that came in a burst: it plays late, the silence after it goes", () => {
  const w = processor();
  // A page stalled 1.5 s through an answer: idle silence, then 1.2 s of speech and
  // 0.3 s of silence arrive at once.
  for (let i = 0; i < 10; i++) w.push(AAC, 0);
  const speech = Math.round(1.2 * RATE / AAC);
  for (let i = 0; i < speech; i++) w.push(AAC);
  for (let i = 0; i < Math.round(0.3 * RATE / AAC); i++) w.push(AAC, 0);
  const heard = w.render(Math.ceil(2 * RATE / QUANTUM));
  assert.equal(heard, speech * AAC, "every sample of the answer is played");
  assert.ok(w.jumps() > 0, "the silence around it was dropped");
});

Deno.test("audio out past its cap drops the oldest audio, speech or not", () => {
  const w = processor();
  // More than CAP_S of speech at once (a page stalled for seconds).
  const frames = Math.ceil((CAP_S + 1) * RATE / AAC);
  for (let i = 0; i < frames; i++) w.push(AAC);
  assert.ok(w.jumps() > 0);
  const heard = w.render(Math.ceil((CAP_S + 2) * RATE / QUANTUM));
  assert.ok(heard <= CAP_S * RATE, `${heard / RATE} s played`);
});

Deno.test("audio out trims a backlog of silence that no jitter used for half a second, never speech", () => {
  for (const value of [0, 0.5]) {
    const w = processor();
    // Start with 100 ms queued (under the 150-ms slack), then keep pace with playback.
    w.push(RATE / 10, value);
    let behindAtStart = 0;
    for (let q = 0; q < 400; q++) {
      if (q % 8 === 0) w.push(8 * QUANTUM, value);
      w.render(1);
      if (q === 1) behindAtStart = w.jumps();
    }
    assert.equal(behindAtStart, 0);
    assert.equal(
      w.jumps() >= 1,
      value === 0,
      value === 0 ? "the unused backlog was trimmed" : "speech was not cut",
    );
    assert.equal(w.underruns(), 0);
  }
});

Deno.test("audio out that comes a video frame at a time is heard one AAC frame past its jitter", () => {
  // A fragment (40 ms, 1920 samples) every 15 quanta, two at first (audio decoded
  // while the output opened); playback starts at one fragment.
  const FRAME = 1920;
  const w = processor(FRAME);
  w.push(FRAME, 0);
  let floor = Infinity;
  for (let q = 0; q < 15 * 75; q++) {
    if (q % 15 === 0) w.push(FRAME, 0);
    w.render(1);
    const c = w.clock();
    if (q >= 15 * 50 && c.playing) floor = Math.min(floor, c.queued as number);
  }
  assert.equal(w.underruns(), 0);
  // The queue's low point is kept at the margin, not at the start target.
  assert.ok(floor <= AAC + AAC / 2, `queue fell only to ${floor}`);
});
