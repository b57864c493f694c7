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
 *
 * Two more things ride the same timeline: caption marks (`mark`), placed in a tag's
 * audio where the audio of a text begins and reported at the stream position they reach
 * (DECISIONS 6, captions on the media timeline), and a tag's end (`end`): once all of
 * its audio went into the stream, its speech stops and an `ended` event follows.
 */
import type { SpeechCut, SpeechEvent } from "../ports/render.ts";
import { MAX_MARKS, TaggedRuns } from "./speech_runs.ts";
import { type AudioQueue, STREAM_RATE } from "./voice.ts";

export { MAX_MARKS };

/** A sample at least this loud (−40 dBFS) is audible. */
export const AUDIBLE_LEVEL = 328;
/** Quiet (with nothing of the tag queued) this long ends its speech. */
const STOP_AFTER = Math.round(STREAM_RATE * 0.3);
/** Turns whose streamed amount is remembered. */
const MAX_TAGS = 16;
/** Where a tag's audio went: its sample `off` (counted from its first) at `pos`. */
interface Piece {
  off: number;
  pos: number;
}

/** Speech tags (turn ids) as the render worker accepts them. */
export const SPEECH_TAG = /^[A-Za-z0-9_-]{1,64}$/;

/** Milliseconds of stream time for `samples` stream samples. */
export function samplesToMs(samples: number): number {
  return Math.round((samples * 1000) / STREAM_RATE);
}

/** Follows tagged agent audio through the render queue into the current stream. */
export class SpeechTimeline {
  readonly #runs = new TaggedRuns();
  /** Samples of each tag taken into a stream so far. */
  #streamed = new Map<string, number>();
  #speaking:
    | { tag: string | undefined; start: number; lastAudibleEnd: number }
    | null = null;
  #pending: { pos: number; event: SpeechEvent }[] = [];
  /** Samples of each tag taken from the queue so far (streamed or not). */
  #taken = new Map<string, number>();
  /** The latest piece of each tag that went into the current stream. */
  #where = new Map<string, Piece>();
  /** Tags whose audio is complete (`end`), until all of it went into the stream. */
  #ending = new Set<string>();
  /** Caption marks waiting in the queue (at most `MAX_MARKS`). */
  get queuedMarks(): number {
    return this.#runs.marks;
  }

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
    this.#where.clear();
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
    this.#runs.push(tag, n);
  }

  /**
   * A caption mark `id` in `tag`'s audio at its sample `offset` (stream rate; without
   * one, after everything of `tag` pushed so far): a `mark` event follows at the stream
   * position the mark reaches. A mark in audio already taken is placed where that audio
   * went; one in audio that went to no stream is dropped (nobody heard it).
   */
  mark(tag: string, id: number, offset?: number): void {
    const taken = this.#taken.get(tag) ?? 0;
    if (offset !== undefined && offset < taken) {
      const at = this.#where.get(tag);
      if (at) this.#placeMark(tag, id, Math.max(0, at.pos + offset - at.off));
      return;
    }
    // Samples of `tag` queued past the mark (0: after all of them).
    const queued = this.#runs.samplesOf(tag);
    const back = offset === undefined
      ? 0
      : Math.max(0, taken + queued - offset);
    this.#runs.mark(tag, id, back);
  }

  /**
   * No more audio of `tag` comes. Once all of it went into the stream (at once when none
   * is queued), its speech stops and an `ended` event follows at `pos` (the stream's next
   * frame). True when nothing of it is queued, speaking or waiting for the stream, or
   * there is no stream (`pos` null): no event will follow, the caller ends the turn now.
   */
  end(tag: string, pos: number | null): boolean {
    const queued = this.#runs.has(tag);
    if (queued && pos !== null) {
      this.#ending.add(tag);
      return false;
    }
    if (pos === null) {
      if (this.#speaking?.tag === tag) this.#speaking = null;
      return true;
    }
    const busy = this.#speaking?.tag === tag ||
      this.#pending.some((p) => p.event.tag === tag);
    if (!busy) return true;
    this.#finish(tag, pos);
    return false;
  }

  /**
   * One frame was taken from the queue: `samples`, of which the first `real` came from
   * it (the rest is silence). `pos` is the stream position of its first sample, or null
   * when no stream is attached (the audio is heard by nobody).
   */
  took(samples: Int16Array, real: number, pos: number | null): void {
    let off = 0;
    for (let run = this.#runs.head(); run; run = this.#runs.head()) {
      if (run.mark !== undefined) {
        const tag = run.tag;
        const id = this.#runs.takeMark();
        if (pos !== null && tag !== undefined) {
          this.#placeMark(tag, id, pos + off);
        }
        this.#settle(tag, pos === null ? null : pos + off);
        continue;
      }
      if (off >= real) break;
      const use = Math.min(run.n, real - off);
      const tag = run.tag;
      if (tag !== undefined) {
        const taken = this.#taken.get(tag) ?? 0;
        if (pos !== null) {
          this.#count(tag, use);
          this.#where.set(tag, { off: taken, pos: pos + off });
        }
        remember(this.#taken, tag, taken + use);
      }
      if (pos !== null) this.#scan(samples, off, off + use, tag, pos);
      off += use;
      const emptied = run.n === use;
      this.#runs.take(use);
      if (emptied) this.#settle(tag, pos === null ? null : pos + off);
    }
    const speaking = this.#speaking;
    if (
      pos !== null && speaking &&
      pos + samples.length - speaking.lastAudibleEnd >= STOP_AFTER &&
      !this.#runs.has(speaking.tag)
    ) {
      this.#stop(speaking.lastAudibleEnd);
    }
  }

  /** After a run of `tag` left the queue at `at`: an ending tag with nothing left ends. */
  #settle(tag: string | undefined, at: number | null): void {
    if (tag === undefined || !this.#ending.has(tag)) return;
    if (this.#runs.has(tag)) return;
    if (at === null) {
      this.#ending.delete(tag);
      if (this.#speaking?.tag === tag) this.#speaking = null;
      return;
    }
    this.#finish(tag, at);
  }

  /** Ends `tag`: its speech stops after its last audible sample, then `ended` at `at`. */
  #finish(tag: string, at: number): void {
    this.#ending.delete(tag);
    const speaking = this.#speaking;
    if (speaking?.tag === tag) this.#stop(speaking.lastAudibleEnd);
    this.#insert(at, {
      speaking: false,
      tag,
      mediaTimeMs: samplesToMs(at),
      ended: true,
    });
  }

  #placeMark(tag: string, id: number, pos: number): void {
    this.#insert(pos, {
      speaking: this.#speaking?.tag === tag,
      tag,
      mediaTimeMs: samplesToMs(pos),
      mark: id,
    });
  }

  /** Adds a pending event, in position order (events at one position keep their order). */
  #insert(pos: number, event: SpeechEvent): void {
    let i = this.#pending.length;
    while (i > 0 && this.#pending[i - 1].pos > pos) i--;
    this.#pending.splice(i, 0, { pos, event });
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
    const target = options.tag ?? this.#speaking?.tag ??
      this.#runs.firstTag();
    const queued = this.#runs.has(target);
    const speaking = this.#speaking;
    const wasSpeaking = speaking !== null && speaking.tag === target;
    if (all && speaking && !wasSpeaking) this.#stopAt(pos);
    if (target !== undefined) this.#ending.delete(target);
    if (all) {
      queue.clear();
      this.#runs.clear();
      // Other turns whose audio was waiting to finish have nothing left: they end here.
      for (const tag of [...this.#ending]) {
        if (pos === null) this.#ending.delete(tag);
        else this.#finish(tag, pos);
      }
    } else if (queued) {
      const rest = queue.take(queue.length).samples;
      let at = 0;
      for (const r of this.#runs.remove(target)) {
        if (!r.dropped) queue.push(rest.subarray(at, at + r.n));
        at += r.n;
      }
    }
    const streamed = target === undefined
      ? undefined
      : this.#streamed.get(target);
    if (!queued && !wasSpeaking && streamed === undefined) return null;
    if (wasSpeaking) this.#speaking = null;
    const playedMs = samplesToMs(streamed ?? 0);
    if (pos !== null) {
      this.#insert(pos, {
        speaking: false,
        tag: target,
        mediaTimeMs: samplesToMs(pos),
        cut: { playedMs },
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

  #count(tag: string, n: number): void {
    remember(this.#streamed, tag, (this.#streamed.get(tag) ?? 0) + n);
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
      this.#insert(pos + first, {
        speaking: true,
        tag,
        mediaTimeMs: samplesToMs(pos + first),
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
    this.#insert(at, {
      speaking: false,
      tag: speaking.tag,
      mediaTimeMs: samplesToMs(at),
    });
  }
}

/** Sets `tag` in `map` as its newest entry, keeping at most `MAX_TAGS` entries. */
function remember(map: Map<string, number>, tag: string, n: number): void {
  if (!map.has(tag) && map.size >= MAX_TAGS) {
    map.delete(map.keys().next().value!);
  }
  map.delete(tag);
  map.set(tag, n);
}
