/**
 * The audio side of WebCodecs playback, and its clock: decoded PCM goes to an
 * AudioWorklet that plays it with a jitter buffer. Playback starts once `start` is
 * queued (the player asks one video frame: audio comes a fragment at a time); while it
 * plays, the lowest the queue went in each half second (what no jitter used) is trimmed
 * down to a margin of one step (one AAC frame); each underrun raises both by a step
 * (never lowered within a stream). Past `slackMs` over the start target (a takeover's
 * GOP burst, a stall that let media pile up) queued silence is dropped, oldest first:
 * the jump to the live edge. Speech is kept — an answer a stalled page received in
 * one burst plays late rather than not at all — unless more than `CAP_S` is queued;
 * then the oldest audio goes, whatever it is. It reports which media time it is playing; the page's presentation
 * clock (`mediaTimeUs`) is that less the output's latency: what is heard now. Video is
 * shown on it.
 */
import { outputLatencyReadable } from "./support.ts";

/** Name the processor registers under. */
export const AUDIO_OUT_PROCESSOR = "avatar-audio-out";

/** Audio queued past which the live-edge drop takes speech too (seconds). */
export const CAP_S = 3;
/** A sample at or above this (either sign) is speech, not silence: -40 dBFS. */
export const AUDIBLE_LEVEL = 0.01;

/**
 * Module source of the processor (plain JavaScript, loaded from a Blob URL). Messages
 * in: `{pcm: Float32Array, ptsUs}` (mono, the context's rate), `{reset: true, startSamples,
 * stepSamples, marginSamples, maxSamples, slackSamples}`, `{stop: true}` (the output
 * closed: the processor ends). Messages out: `{clock: ptsUs, frame, playing}`
 * every few quanta and on every change, `{underrun: true, target}`, `{jumped: samples}`.
 */
export const AUDIO_OUT_SOURCE = `
class AvatarAudioOut extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunks = [];
    this.queued = 0;
    this.offset = 0;
    this.playing = false;
    this.target = 1920;
    this.step = 1920;
    this.margin = 1920;
    this.max = 19200;
    this.slack = 7200;
    this.headUs = 0;
    this.quanta = 0;
    this.floor = Infinity;
    this.played = 0;
    this.stopped = false;
    this.cap = ${CAP_S} * sampleRate;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }
  onMessage(m) {
    if (m.stop) {
      this.stopped = true;
      this.chunks = [];
      return;
    }
    if (m.reset) {
      this.chunks = [];
      this.queued = 0;
      this.offset = 0;
      this.playing = false;
      this.target = m.startSamples;
      this.step = m.stepSamples;
      this.margin = m.marginSamples;
      this.max = m.maxSamples;
      this.slack = m.slackSamples;
      this.floor = Infinity;
      this.report();
      return;
    }
    let loud = false;
    for (let i = 0; i < m.pcm.length && !loud; i++) {
      loud = m.pcm[i] >= ${AUDIBLE_LEVEL} || m.pcm[i] <= -${AUDIBLE_LEVEL};
    }
    this.chunks.push({ pcm: m.pcm, ptsUs: m.ptsUs, loud });
    this.queued += m.pcm.length;
    if (this.queued > this.target + this.slack) this.drop(this.queued - this.target);
  }
  // Catches up by n samples: silence first (oldest first, speech kept); past the cap,
  // the oldest audio down to the target, whatever it is.
  drop(n) {
    let dropped = this.dropSilence(n);
    if (this.queued > this.cap) dropped += this.dropOldest(this.queued - this.target);
    if (dropped === 0) return;
    this.port.postMessage({ jumped: dropped });
    this.report();
  }
  dropSilence(n) {
    let dropped = 0;
    let i = 0;
    while (i < this.chunks.length && dropped < n) {
      const c = this.chunks[i];
      if (c.loud) { i++; continue; }
      const start = i === 0 ? this.offset : 0;
      const k = Math.min(c.pcm.length - start, n - dropped);
      if (k === c.pcm.length - start) {
        this.chunks.splice(i, 1);
        if (i === 0) this.offset = 0;
      } else if (i === 0) this.offset += k;
      else { c.pcm = c.pcm.subarray(k); c.ptsUs += k * 1e6 / sampleRate; }
      dropped += k;
    }
    this.queued -= dropped;
    return dropped;
  }
  dropOldest(n) {
    let dropped = 0;
    while (dropped < n && this.chunks.length > 0) {
      const c = this.chunks[0];
      const left = c.pcm.length - this.offset;
      const k = Math.min(left, n - dropped);
      this.offset += k;
      dropped += k;
      if (this.offset >= c.pcm.length) { this.chunks.shift(); this.offset = 0; }
    }
    this.queued -= dropped;
    return dropped;
  }
  report() {
    const c = this.chunks[0];
    const ptsUs = c ? c.ptsUs + this.offset * 1e6 / sampleRate : this.headUs;
    this.port.postMessage({
      clock: ptsUs, frame: currentFrame, playing: this.playing, queued: this.queued,
    });
  }
  process(inputs, outputs) {
    if (this.stopped) return false;
    const out = outputs[0][0];
    if (!out) return true;
    const wasPlaying = this.playing;
    if (!this.playing && this.queued >= this.target) this.playing = true;
    if (this.playing && this.chunks.length > 0) {
      const c = this.chunks[0];
      this.headUs = c.ptsUs + this.offset * 1e6 / sampleRate;
    }
    this.quanta++;
    if (this.playing !== wasPlaying || this.quanta % 8 === 0) this.report();
    if (!this.playing) {
      out.fill(0);
      this.floor = Infinity;
      this.played = 0;
      return true;
    }
    // The lowest the queue went over the last half second of playing (188 quanta):
    // what no jitter used. Kept down to the margin, so audio that arrives in bursts
    // (a fragment at a time) is heard as soon after it arrives as the jitter allows.
    this.floor = Math.min(this.floor, this.queued);
    if (++this.played % 188 === 0) {
      if (this.floor > this.margin + (this.step >> 1)) this.drop(this.floor - this.margin);
      this.floor = Infinity;
    }
    let i = 0;
    while (i < out.length && this.chunks.length > 0) {
      const c = this.chunks[0];
      const k = Math.min(out.length - i, c.pcm.length - this.offset);
      out.set(c.pcm.subarray(this.offset, this.offset + k), i);
      i += k;
      this.offset += k;
      this.queued -= k;
      this.headUs = c.ptsUs + this.offset * 1e6 / sampleRate;
      if (this.offset >= c.pcm.length) { this.chunks.shift(); this.offset = 0; }
    }
    if (i < out.length) {
      out.fill(0, i);
      this.playing = false;
      this.target = Math.min(this.max, this.target + this.step);
      this.margin = Math.min(this.max, this.margin + this.step);
      this.port.postMessage({ underrun: true, target: this.target });
      this.report();
    }
    for (let ch = 1; ch < outputs[0].length; ch++) outputs[0][ch].set(out);
    return true;
  }
}
registerProcessor("${AUDIO_OUT_PROCESSOR}", AvatarAudioOut);
`;

export interface AudioOutStats {
  underruns: number;
  /** Times queued audio was dropped to get back to the live edge. */
  liveEdgeJumps: number;
  /** The jitter buffer's current start target (ms). */
  jitterTargetMs: number;
  /** Audio queued in the worklet at its last report (ms). */
  queuedMs: number;
  /** The output's latency after the worklet: base + output latency (ms). */
  outputLatencyMs: number;
}

/** The stats of no audio output. */
export const NO_AUDIO_STATS: Readonly<AudioOutStats> = {
  underruns: 0,
  liveEdgeJumps: 0,
  jitterTargetMs: 0,
  queuedMs: 0,
  outputLatencyMs: 0,
};

/** Jitter buffer bounds, in video frames. */
const MAX_TARGET_FRAMES = 10;

/**
 * The page's audio contexts, one per sample rate (and worklet URL), each with the
 * processor's module loaded once: players share them and never close them. WebKitGTK's
 * page deadlocked when a player closed its context while the next one opened its own (a
 * takeover, or one session after another): its main thread waited, inside GStreamer's
 * state change, for a lock an AudioWorklet thread held while it waited for the main
 * thread. Sharing also spares each later player the context's start (~240 ms of the
 * main thread the first time in headless Chromium) and keeps a page under the
 * browser's limit of contexts.
 */
const contexts = new Map<
  string,
  { ctx: AudioContext; module: Promise<void> }
>();

/** The shared context for `sampleRate`, opened (and its module loaded) on first use. */
function sharedContext(
  sampleRate: number,
  workletUrl: string | undefined,
): { ctx: AudioContext; module: Promise<void> } {
  const key = `${sampleRate} ${workletUrl ?? ""}`;
  const known = contexts.get(key);
  if (known && known.ctx.state !== "closed") return known;
  // Numeric 0: the smallest buffer the device allows. "interactive" is larger on
  // some outputs (headless Chromium: 10 ms base + 32 ms output, against 2.7 + 8),
  // and video is shown on the heard clock, so every ms here is glass to glass.
  const ctx = new AudioContext({ sampleRate, latencyHint: 0 });
  const blob = workletUrl ? null : URL.createObjectURL(
    new Blob([AUDIO_OUT_SOURCE], { type: "text/javascript" }),
  );
  const entry = {
    ctx,
    module: ctx.audioWorklet.addModule(workletUrl ?? blob!).finally(() => {
      if (blob) URL.revokeObjectURL(blob);
    }),
  };
  // A module that did not load is tried again, on a new context, by the next player.
  entry.module.catch(() => {
    if (contexts.get(key) === entry) contexts.delete(key);
    void ctx.close().catch(() => {});
  });
  contexts.set(key, entry);
  return entry;
}

/** The worklet player on the page's shared AudioContext; `reset` per stream. */
export class AudioOut {
  readonly stats: AudioOutStats = {
    underruns: 0,
    liveEdgeJumps: 0,
    jitterTargetMs: 0,
    queuedMs: 0,
    outputLatencyMs: 0,
  };
  readonly ctx: AudioContext;
  #node: AudioWorkletNode | null = null;
  #ready: Promise<void>;
  #closed = false;
  #clock = { ptsUs: 0, frame: 0, playing: false, known: false };
  #pending: Array<{ pcm: Float32Array; ptsUs: number }> = [];
  #resetMsg: Record<string, unknown> | null = null;
  readonly #readsOutput = outputLatencyReadable();
  /** The stream's rate, and how many of its samples make one output sample. */
  readonly streamRate: number;
  #step: number;

  /**
   * Plays a stream at `streamRate`. A rate that is a multiple of 48 kHz (the service's
   * 96-kHz AAC) plays at 48 kHz, every `n`-th sample: its encoder band-limits it far
   * below 24 kHz, so nothing folds back, and the output runs at the device's own rate.
   */
  constructor(streamRate: number, workletUrl?: string) {
    this.streamRate = streamRate;
    this.#step = streamRate > 48000 && streamRate % 48000 === 0
      ? streamRate / 48000
      : 1;
    const shared = sharedContext(streamRate / this.#step, workletUrl);
    this.ctx = shared.ctx;
    this.#ready = shared.module.then(
      () => {
        if (this.#closed) return;
        const node = new AudioWorkletNode(this.ctx, AUDIO_OUT_PROCESSOR, {
          numberOfInputs: 0,
          outputChannelCount: [1],
        });
        node.port.onmessage = (e) => this.#onMessage(e.data);
        node.connect(this.ctx.destination);
        this.#node = node;
        if (this.#resetMsg) node.port.postMessage(this.#resetMsg);
        for (const m of this.#pending.splice(0)) {
          node.port.postMessage(m, [m.pcm.buffer]);
        }
      },
    ).catch((err) => {
      // A closed output has nothing to play: its module's fate is no failure of its.
      if (!this.#closed) throw err;
    });
  }

  /**
   * Resolves once the worklet runs, or once the output is closed (closing it while the
   * worklet loads is no failure); rejects when it cannot load.
   */
  get ready(): Promise<void> {
    return this.#ready;
  }

  get sampleRate(): number {
    return this.ctx.sampleRate;
  }

  /**
   * A new stream: queued audio dropped, the jitter buffer back at `startMs` to start and
   * a margin of `stepMs`, each growing by `stepMs` on each underrun (up to
   * `MAX_TARGET_FRAMES` of `startMs`).
   */
  reset(startMs: number, stepMs: number, slackMs: number): void {
    const perMs = this.ctx.sampleRate / 1000;
    this.#resetMsg = {
      reset: true,
      startSamples: Math.round(startMs * perMs),
      stepSamples: Math.round(stepMs * perMs),
      marginSamples: Math.round(stepMs * perMs),
      maxSamples: Math.round(startMs * MAX_TARGET_FRAMES * perMs),
      slackSamples: Math.round(slackMs * perMs),
    };
    this.stats.jitterTargetMs = startMs;
    this.#clock = { ptsUs: 0, frame: 0, playing: false, known: false };
    this.#pending = [];
    this.#node?.port.postMessage(this.#resetMsg);
  }

  /** Queues decoded mono PCM (at the stream's rate) that starts at media time `ptsUs`. */
  push(pcm: Float32Array, ptsUs: number): void {
    const step = this.#step;
    if (step > 1) {
      const out = new Float32Array(Math.floor(pcm.length / step));
      for (let i = 0; i < out.length; i++) out[i] = pcm[i * step];
      pcm = out;
    }
    const m = { pcm, ptsUs };
    if (this.#node) this.#node.port.postMessage(m, [pcm.buffer]);
    else this.#pending.push(m);
  }

  /**
   * The media time heard now (µs): the worklet's playhead advanced by the audio
   * clock since it reported, less the output latency; null before audio plays.
   */
  get mediaTimeUs(): number | null {
    const c = this.#clock;
    if (!c.known) return null;
    if (!c.playing) return c.ptsUs;
    const rate = this.ctx.sampleRate;
    const since = Math.max(0, this.ctx.currentTime - c.frame / rate);
    return c.ptsUs + (since - this.#latencyS()) * 1e6;
  }

  /** Whether audio is being played (false before the first start and after underruns). */
  get playing(): boolean {
    return this.#clock.playing;
  }

  /**
   * The output's latency after the worklet (s): base latency, plus the device's output
   * latency where reading it is safe (`outputLatencyReadable`).
   */
  #latencyS(): number {
    const output = this.#readsOutput ? this.ctx.outputLatency || 0 : 0;
    return output + (this.ctx.baseLatency || 0);
  }

  /**
   * Resumes the context where the browser holds it (autoplay; Safari's
   * "interrupted"); a running one is left alone.
   */
  resume(): Promise<void> {
    const state = this.ctx.state as string;
    return state !== "running" && state !== "closed"
      ? this.ctx.resume()
      : Promise.resolve();
  }

  /** Ends this output: its processor stops; the shared context stays open. */
  close(): void {
    this.#closed = true;
    const node = this.#node;
    this.#node = null;
    if (!node) return;
    node.port.postMessage({ stop: true });
    node.port.onmessage = null;
    node.disconnect();
  }

  #onMessage(m: Record<string, unknown>): void {
    if (typeof m.clock === "number") {
      this.stats.queuedMs = Math.round(
        (m.queued as number) / this.ctx.sampleRate * 1000,
      );
      this.stats.outputLatencyMs = Math.round(this.#latencyS() * 1000);
      this.#clock = {
        ptsUs: m.clock,
        frame: m.frame as number,
        playing: m.playing === true,
        known: true,
      };
    } else if (m.underrun) {
      this.stats.underruns++;
      this.stats.jitterTargetMs = Math.round(
        (m.target as number) / this.ctx.sampleRate * 1000,
      );
    } else if (typeof m.jumped === "number") {
      this.stats.liveEdgeJumps++;
    }
  }
}
