/**
 * The agent's audio as a built-in render session takes it (./builtin_session.ts): pushed
 * PCM resampled to the stream rate into a bounded queue, the render loop taking one
 * frame's worth a tick. Beside the samples it keeps what is tied to where they stand in
 * the queue: when each push came (audio-latency marks, handed to the encoder run that
 * codes them) and the caption texts whose audio starts there (they cue the head).
 */
import { AudioQueue, Resampler, STREAM_RATE } from "./voice.ts";

/** Latency marks and caption cues held, at most each. */
export const MAX_AUDIO_MARKS = 256;
/** Tags whose audio's start is remembered (caption cues by offset). */
const MAX_TAGS = 16;

/** One frame's take: its samples, how many were real audio, and what fell in it. */
export interface AudioTake {
  samples: Int16Array;
  real: number;
  /** Caption texts whose audio starts in this frame. */
  texts: string[];
  /** Pushes whose first sample is in this frame: its offset there, and when it came. */
  marks: Array<{ offset: number; at: number }>;
}

export class AgentAudio {
  readonly queue = new AudioQueue();
  #resampler = new Resampler(STREAM_RATE);
  /** Samples pushed in all (the index of the next pushed sample). */
  #pushed = 0;
  #marks: Array<{ idx: number; at: number }> = [];
  /** Caption texts by where their audio starts (pushed-sample index), in order. */
  #cues: Array<{ idx: number; text: string }> = [];
  /** Where each recent tag's audio started (pushed-sample index). */
  #tagStart = new Map<string, number>();
  #take: AudioTake = {
    samples: new Int16Array(0),
    real: 0,
    texts: [],
    marks: [],
  };

  constructor(private readonly now: () => number) {}

  /**
   * Queues `pcm` (at `sampleRate`) of `tag`: the samples queued (at the stream rate),
   * or null when the queue refused them (full).
   */
  push(pcm: Int16Array, sampleRate: number, tag?: string): number | null {
    const samples = this.#resampler.process(pcm, sampleRate);
    if (!this.queue.push(samples)) return null;
    if (this.#marks.length < MAX_AUDIO_MARKS) {
      this.#marks.push({ idx: this.#pushed, at: this.now() });
    }
    if (tag !== undefined && !this.#tagStart.has(tag)) {
      this.#tagStart.set(tag, this.#pushed);
      if (this.#tagStart.size > MAX_TAGS) {
        this.#tagStart.delete(this.#tagStart.keys().next().value!);
      }
    }
    this.#pushed += samples.length;
    return samples.length;
  }

  /**
   * A caption text of `tag` whose audio starts `offset` samples into the tag's audio
   * (undefined: where the next pushed sample goes).
   */
  cue(tag: string, offset: number | undefined, text: string): void {
    if (this.#cues.length >= MAX_AUDIO_MARKS) return;
    const idx = offset === undefined
      ? this.#pushed
      : (this.#tagStart.get(tag) ?? this.#pushed) + offset;
    let k = this.#cues.length;
    while (k > 0 && this.#cues[k - 1].idx > idx) k--;
    this.#cues.splice(k, 0, { idx, text });
  }

  /** Audio was cut from the queue: the marks and cues indexing it are void. */
  cut(): void {
    this.#marks = [];
    this.#cues = [];
  }

  /** One frame: `n` samples (silence past the queued audio). The result is reused. */
  take(n: number): AudioTake {
    const head = this.#pushed - this.queue.length;
    const { samples, real } = this.queue.take(n);
    const t = this.#take;
    t.samples = samples;
    t.real = real;
    t.texts.length = 0;
    t.marks.length = 0;
    while (this.#cues.length > 0 && this.#cues[0].idx < head + real) {
      t.texts.push(this.#cues.shift()!.text);
    }
    while (this.#marks.length > 0 && this.#marks[0].idx < head + real) {
      const m = this.#marks.shift()!;
      if (m.idx >= head) t.marks.push({ offset: m.idx - head, at: m.at });
    }
    return t;
  }
}
