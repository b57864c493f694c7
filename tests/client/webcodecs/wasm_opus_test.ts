/**
 * The WebAssembly Opus decoder of WebKit on GStreamer (client/webcodecs/wasm_opus.ts) on
 * the service's own Opus: the encoder's fMP4 (lib/render/encoder.ts, real ffmpeg)
 * demuxed as the player does (client/webcodecs/fmp4.ts) and decoded, the input's tone
 * back out on the stream's timeline; a corrupt frame said and passed over; nothing out
 * after `close`; and no decoder where WebAssembly may not be compiled (a CSP stand-in).
 */
import assert from "node:assert/strict";
import {
  parseInitSegment,
  parseMediaSegment,
} from "../../../client/webcodecs/fmp4.ts";
import { monoTrack, SILENT_FRAME } from "./_audio.ts";
import {
  WasmOpusDecoder,
  wasmOpusReady,
} from "../../../client/webcodecs/wasm_opus.ts";
import type { PcmSink } from "../../../client/webcodecs/audio_decoder.ts";
import { Encoder } from "../../../lib/render/encoder.ts";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { poll } from "../../lib/render/_helpers.ts";

const FRAMES = 50; // 2 s at 25 fps
const PER_FRAME = 1920; // samples at 48 kHz
const TONE_HZ = 440;
/** The tone starts 0.5 s in; silence before it. */
const TONE_FROM = 24000;
const TONE_LEVEL = 8000;

/** The service's Opus stream of 2 s: 0.5 s of silence, then a 440-Hz tone. */
async function encodeTone(): Promise<{ init: Uint8Array; segs: Uint8Array[] }> {
  const inits: Uint8Array[] = [];
  const segs: Uint8Array[] = [];
  const failures: Error[] = [];
  const enc = new Encoder({
    ffmpeg: await ffmpegPath(),
    width: 64,
    height: 64,
    fps: 25,
    sampleRate: 48000,
    audio: "opus",
    maxQueuedFrames: FRAMES,
  }, {
    onInit: (b) => inits.push(b),
    onSegment: (b) => segs.push(b),
    onFailure: (e) => failures.push(e),
  });
  for (let n = 0; n < FRAMES; n++) {
    const pcm = new Int16Array(PER_FRAME).map((_, i) => {
      const k = n * PER_FRAME + i;
      return k < TONE_FROM
        ? 0
        : Math.round(TONE_LEVEL * Math.sin(2 * Math.PI * TONE_HZ * k / 48000));
    });
    const frame = new Uint8Array(64 * 64 * 3 / 2).fill(128);
    assert.ok(enc.write(frame, new Uint8Array(pcm.buffer)), `frame ${n}`);
  }
  const r = await enc.stop({ graceful: true, timeoutMs: 10_000 });
  assert.ok(r.clean && failures.length === 0, failures.join("; "));
  assert.equal(inits.length, 1);
  return { init: inits[0], segs };
}

interface Out {
  pcm: Float32Array;
  ptsUs: number;
  durationUs: number;
}

function recorder(): PcmSink & { out: Out[]; errors: string[] } {
  const out: Out[] = [];
  const errors: string[] = [];
  return {
    out,
    errors,
    pcm: (pcm, ptsUs, durationUs) => out.push({ pcm, ptsUs, durationUs }),
    error: (m) => errors.push(m),
  };
}

/** RMS and zero-crossing frequency of the decoded audio between two media times (s). */
function measure(out: Out[], fromS: number, toS: number) {
  const xs: number[] = [];
  for (const o of out) {
    for (let i = 0; i < o.pcm.length; i++) {
      const t = o.ptsUs / 1e6 + i / 48000;
      if (t >= fromS && t < toS) xs.push(o.pcm[i]);
    }
  }
  let sum = 0, crossings = 0;
  for (let i = 0; i < xs.length; i++) {
    sum += xs[i] * xs[i];
    if (i > 0 && (xs[i - 1] < 0) !== (xs[i] < 0)) crossings++;
  }
  return {
    rms: Math.sqrt(sum / xs.length),
    hz: crossings / 2 / (xs.length / 48000),
  };
}

Deno.test("WasmOpusDecoder decodes the service's Opus: the tone back on the stream's timeline", async () => {
  const { init, segs } = await encodeTone();
  const tracks = parseInitSegment(init);
  const track = tracks.find((t) => t.kind === "audio")!;
  assert.equal(track.codec, "opus");
  const frames = segs.flatMap((s) => parseMediaSegment(s, tracks))
    .filter((s) => s.trackId === track.trackId);
  assert.ok(frames.length >= 90, `${frames.length} Opus frames`);

  const sink = recorder();
  const dec = new WasmOpusDecoder(track, sink);
  // Frames that come while the decoder starts are held, then decoded in order...
  for (const f of frames.slice(0, 10)) dec.decode(f.data, f.ptsUs);
  assert.equal(sink.out.length, 0);
  await poll(() => sink.out.length === 10);
  // ...and once it runs, each as it comes.
  for (const f of frames.slice(10)) dec.decode(f.data, f.ptsUs);
  assert.equal(sink.out.length, frames.length);
  dec.close();

  assert.deepEqual(sink.errors, []);
  for (const [i, o] of sink.out.entries()) {
    assert.equal(o.pcm.length, 960);
    assert.equal(o.durationUs, 20_000);
    assert.equal(o.ptsUs, frames[i].ptsUs);
  }
  const quiet = measure(sink.out, 0, 0.45);
  assert.ok(quiet.rms < 0.01, `silence at RMS ${quiet.rms}`);
  const tone = measure(sink.out, 0.6, 1.8);
  const expected = TONE_LEVEL / 32768 / Math.SQRT2;
  assert.ok(
    Math.abs(tone.rms - expected) < 0.05 * expected,
    `tone at RMS ${tone.rms}, expected ${expected}`,
  );
  assert.ok(Math.abs(tone.hz - TONE_HZ) < 2, `tone at ${tone.hz} Hz`);
});

const MONO_OPUS = monoTrack("opus");
/** Code 3 with a frame count of 0: libopus's OPUS_INVALID_PACKET. */
const CORRUPT_FRAME = Uint8Array.of(0xfb, 0x00);

Deno.test("WasmOpusDecoder says a corrupt frame and decodes the next; nothing after close", async () => {
  const logged: unknown[] = [];
  const consoleError = console.error;
  console.error = (...a: unknown[]) => logged.push(a.join(" "));
  try {
    const sink = recorder();
    const dec = new WasmOpusDecoder(MONO_OPUS, sink);
    dec.decode(SILENT_FRAME, 0);
    dec.decode(CORRUPT_FRAME, 20_000);
    dec.decode(SILENT_FRAME, 40_000);
    await poll(() => sink.out.length === 2);
    assert.deepEqual(sink.out.map((o) => o.ptsUs), [0, 40_000]);
    assert.equal(sink.errors.length, 1);
    assert.match(sink.errors[0], /^The Opus decoder could not decode: .*-4/);
    assert.equal(logged.length, 1, "the library logs it too");
    dec.close();
    dec.decode(SILENT_FRAME, 60_000);
    assert.equal(sink.out.length, 2);

    // Closed while it starts: what it held is never decoded.
    const early = recorder();
    const closed = new WasmOpusDecoder(MONO_OPUS, early);
    closed.decode(SILENT_FRAME, 0);
    closed.close();
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(early.out, []);
  } finally {
    console.error = consoleError;
  }
});

Deno.test("wasmOpusReady() resolves where WebAssembly runs, rejects where a CSP forbids it", async () => {
  await wasmOpusReady();
  // What a page's CSP without 'wasm-unsafe-eval' does: WebKit compiles, and refuses
  // the instance (Chromium refuses the compile too).
  const instantiate = WebAssembly.instantiate;
  const refuse = () =>
    Promise.reject(
      new WebAssembly.CompileError("Refused to create a WebAssembly object"),
    );
  WebAssembly.instantiate = refuse as typeof WebAssembly.instantiate;
  try {
    await assert.rejects(wasmOpusReady(), WebAssembly.CompileError);
  } finally {
    WebAssembly.instantiate = instantiate;
  }
});

Deno.test("wasmOpusReady() gives up on a decoder that never starts", async () => {
  // The library's instance never comes (its promise chain has no error path).
  const instantiate = WebAssembly.instantiate;
  const never = (bytes: unknown, ...rest: unknown[]) =>
    bytes instanceof WebAssembly.Module
      ? new Promise(() => {})
      : (instantiate as (...a: unknown[]) => unknown)(bytes, ...rest);
  WebAssembly.instantiate = never as typeof WebAssembly.instantiate;
  try {
    await assert.rejects(wasmOpusReady(50), /did not start/);
  } finally {
    WebAssembly.instantiate = instantiate;
  }
});
