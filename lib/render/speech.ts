/**
 * Where the avatar's audible speech sits on a stream's timeline (DECISIONS 6,
 * `avatar.speaking`), and cutting it (interrupt, `response.cancel`).
 *
 * The renderer queues agent audio tagged by turn and takes one frame's worth per tick;
 * this module follows the tags through the queue. Speech of a tag starts at the first
 * audible sample taken into the stream and stops after its last audible sample, once no
 * audio of that tag is queued and ~300 ms passed without an audible one, or when another
 * tag's speech starts, or at a cut. Positions are stream samples at `STREAM_RATE` (the
 * stream's presentation time × rate). Events wait until a media segment covering their
 * position has gone to the sink (or, on the RTP output, until the RTP encoder was handed
 * the audio at that position), so a browser always has the media before the event.
 */
import type { SpeechCut, SpeechEvent } from "./port.ts";
import { type AudioQueue, STREAM_RATE } from "./voice.ts";

/** A sample at least this loud (−40 dBFS) is audible. */
export const AUDIBLE_LEVEL = 328;
/** Quiet (with nothing of the tag queued) this long ends its speech. */
const STOP_AFTER = Math.round(STREAM_RATE * 0.3);
/** Turns whose streamed amount is remembered. */
const MAX_TAGS = 16;

interface Run {
  tag: string | undefined;
  n: number;
}

/** Speech tags (turn ids) as the render worker accepts them. */
export const SPEECH_TAG = /^[A-Za-z0-9_-]{1,64}$/;

/** Milliseconds of stream time for `samples` stream samples. */
export function samplesToMs(samples: number): number {
  return Math.round((samples * 1000) / STREAM_RATE);
}

/** Follows tagged agent audio through the render queue into the current stream. */
export class SpeechTimeline {
  #runs: Run[] = [];
  /** Samples of each tag taken into a stream so far. */
  #streamed = new Map<string, number>();
  #speaking:
    | { tag: string | undefined; start: number; lastAudibleEnd: number }
    | null = null;
  #pending: { pos: number; event: SpeechEvent }[] = [];

  /** The tag speaking now (undefined: untagged speech), or null when silent. */
  get speakingTag(): string | undefined | null {
    return this.#speaking ? this.#speaking.tag : null;
  }

  /** Whether events wait for a segment to cover them. */
  get hasPending(): boolean {
    return this.#pending.length > 0;
  }

  /** A new encoder run: its positions restart at 0, nothing of the old one holds. */
  newRun(): void {
    this.#pending = [];
    this.#speaking = null;
  }

  /**
   * A new viewer of the same run (a takeover): if a tag is speaking and its start went
   * to an earlier viewer, the start is sent again (at the new viewer's first moment).
   */
  newViewer(): void {
    const speaking = this.#speaking;
    if (!speaking) return;
    if (
      this.#pending.some((p) =>
        p.event.speaking && p.event.tag === speaking.tag
      )
    ) {
      return;
    }
    this.#pending.unshift({
      pos: speaking.start,
      event: {
        speaking: true,
        tag: speaking.tag,
        mediaTimeMs: samplesToMs(speaking.start),
      },
    });
  }

  /** `n` samples of `tag` joined the queue's tail. */
  pushed(tag: string | undefined, n: number): void {
    if (n <= 0) return;
    const last = this.#runs.at(-1);
    if (last && last.tag === tag) last.n += n;
    else this.#runs.push({ tag, n });
  }

  /** The queue dropped its `n` oldest samples (it was full). */
  droppedOldest(n: number): void {
    this.#consume(n);
  }

  /**
   * One frame was taken from the queue: `samples`, of which the first `real` came from
   * it (the rest is silence). `pos` is the stream position of its first sample, or null
   * when no stream is attached (the audio is heard by nobody).
   */
  took(samples: Int16Array, real: number, pos: number | null): void {
    let off = 0;
    while (off < real && this.#runs.length > 0) {
      const run = this.#runs[0];
      const use = Math.min(run.n, real - off);
      if (pos !== null) {
        this.#count(run.tag, use);
        this.#scan(samples, off, off + use, run.tag, pos);
      }
      off += use;
      this.#consume(use);
    }
    const speaking = this.#speaking;
    if (
      pos !== null && speaking &&
      pos + samples.length - speaking.lastAudibleEnd >= STOP_AFTER &&
      !this.#runs.some((r) => r.tag === speaking.tag)
    ) {
      this.#stop(speaking.lastAudibleEnd);
    }
  }

  /**
   * Cuts a turn: drops the queued audio of `tag` from `queue` at once (everything with
   * `all`) and ends its speech at `pos` (the stream's next frame; null without a
   * stream). Reports on `tag`, or without one on the tag speaking or else the oldest
   * queued: the tag and how much of it went into streams (ms); null when that tag has
   * nothing queued, speaking or streamed.
   */
  cut(
    queue: AudioQueue,
    options: { tag?: string; all?: boolean },
    pos: number | null,
  ): SpeechCut | null {
    const all = options.all || options.tag === undefined;
    const target = options.tag ?? this.#speaking?.tag ?? this.#runs[0]?.tag;
    const queued = this.#runs.some((r) => r.tag === target);
    const speaking = this.#speaking;
    const wasSpeaking = speaking !== null && speaking.tag === target;
    if (all && speaking && !wasSpeaking) this.#stopAt(pos);
    if (all) {
      queue.clear();
      this.#runs = [];
    } else if (queued) {
      const rest = queue.take(queue.length).samples;
      let at = 0;
      for (const r of this.#runs) {
        if (r.tag !== target) queue.push(rest.subarray(at, at + r.n));
        at += r.n;
      }
      this.#runs = this.#runs.filter((r) => r.tag !== target);
    }
    const streamed = target === undefined
      ? undefined
      : this.#streamed.get(target);
    if (!queued && !wasSpeaking && streamed === undefined) return null;
    if (wasSpeaking) this.#speaking = null;
    const playedMs = samplesToMs(streamed ?? 0);
    if (pos !== null) {
      this.#pending.push({
        pos,
        event: {
          speaking: false,
          tag: target,
          mediaTimeMs: samplesToMs(pos),
          cut: { playedMs },
        },
      });
    }
    return { tag: target, playedMs, wasSpeaking };
  }

  /** The events a segment ending at stream position `end` (exclusive) delivered. */
  delivered(end: number): SpeechEvent[] {
    return this.deliveredAt(end).map((p) => p.event);
  }

  /** As `delivered`, with each event's stream position. */
  deliveredAt(end: number): { pos: number; event: SpeechEvent }[] {
    const out: { pos: number; event: SpeechEvent }[] = [];
    while (this.#pending.length > 0 && this.#pending[0].pos < end) {
      out.push(this.#pending.shift()!);
    }
    return out;
  }

  #consume(n: number): void {
    while (n > 0 && this.#runs.length > 0) {
      const head = this.#runs[0];
      const use = Math.min(head.n, n);
      head.n -= use;
      n -= use;
      if (head.n === 0) this.#runs.shift();
    }
  }

  #count(tag: string | undefined, n: number): void {
    if (tag === undefined) return;
    const before = this.#streamed.get(tag);
    if (before === undefined && this.#streamed.size >= MAX_TAGS) {
      this.#streamed.delete(this.#streamed.keys().next().value!);
    }
    this.#streamed.delete(tag);
    this.#streamed.set(tag, (before ?? 0) + n);
  }

  /** Audible samples in `samples[from, to)` (of `tag`, the frame at `pos`). */
  #scan(
    samples: Int16Array,
    from: number,
    to: number,
    tag: string | undefined,
    pos: number,
  ): void {
    let first = -1;
    let last = -1;
    for (let i = from; i < to; i++) {
      const s = samples[i];
      if (s >= AUDIBLE_LEVEL || s <= -AUDIBLE_LEVEL) {
        if (first < 0) first = i;
        last = i;
      }
    }
    if (first < 0) return;
    const speaking = this.#speaking;
    if (speaking && speaking.tag !== tag) this.#stop(speaking.lastAudibleEnd);
    if (!this.#speaking) {
      this.#pending.push({
        pos: pos + first,
        event: { speaking: true, tag, mediaTimeMs: samplesToMs(pos + first) },
      });
      this.#speaking = {
        tag,
        start: pos + first,
        lastAudibleEnd: pos + last + 1,
      };
    } else {
      this.#speaking.lastAudibleEnd = pos + last + 1;
    }
  }

  /** Ends the current speech at `pos` (the next frame), when there is a stream. */
  #stopAt(pos: number | null): void {
    if (pos === null) this.#speaking = null;
    else this.#stop(pos);
  }

  #stop(at: number): void {
    const speaking = this.#speaking;
    if (!speaking) return;
    this.#speaking = null;
    this.#pending.push({
      pos: at,
      event: {
        speaking: false,
        tag: speaking.tag,
        mediaTimeMs: samplesToMs(at),
      },
    });
  }
}
