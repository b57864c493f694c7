/**
 * Avatar transcripts on the media timeline (DECISIONS 6, captions): each text gets a
 * caption mark in its turn's audio (where the engine's stream had it: after the audio
 * that came before it, or where the adapter says its audio begins), and is sent once
 * the stream reached that mark, with `media_time_ms` = the mark's presentation time, no
 * earlier than the turn's `avatar.speaking` true time. A text whose mark was never
 * reached because its audio was cut is sent with `heard: false`.
 */
import type { RenderSession } from "../ports/render.ts";
import type { ServerMessage } from "./protocol.ts";

/** Texts held per turn, at most; past it the oldest goes out unplaced. */
const MAX_HELD_PER_TURN = 256;
/**
 * Texts held over all turns, at most (the renderer keeps as many caption marks:
 * `MAX_MARKS`); past it the oldest of the oldest turn goes out unplaced.
 */
export const MAX_HELD = 512;
/** Turns whose speech start is remembered. */
const MAX_STARTS = 16;

/** What the captions need from the live session. */
export interface CaptionsHost {
  send(msg: ServerMessage): void;
  render(): RenderSession | null;
}

interface Held {
  id: number;
  text: string;
  final: boolean;
  /** The mark's media time, once the stream reached it. */
  at?: number;
}

/** The avatar transcripts of one live session, held until their place is known. */
export class Captions {
  #seq = 0;
  #held = new Map<string, Held[]>();
  #heldCount = 0;
  #starts = new Map<string, number>();

  constructor(private readonly host: CaptionsHost) {}

  /**
   * A text of avatar turn `turnId`. `offsetMs`: where in the turn's audio its audio
   * begins; by default after all audio of the turn received so far (text before audio).
   */
  add(turnId: string, text: string, final: boolean, offsetMs?: number): void {
    const render = this.host.render();
    if (!render) {
      this.#send(turnId, { id: 0, text, final }, undefined);
      return;
    }
    const id = ++this.#seq;
    const list = this.#held.get(turnId) ?? [];
    this.#held.set(turnId, list);
    list.push({ id, text, final });
    this.#heldCount++;
    if (list.length > MAX_HELD_PER_TURN) this.#sendOldest(turnId, list);
    else if (this.#heldCount > MAX_HELD) {
      for (const [oldest, l] of this.#held) {
        if (l.length === 0) continue;
        this.#sendOldest(oldest, l);
        break;
      }
    }
    render.markText(turnId, id, offsetMs, text);
  }

  /** Texts held now, over all turns (at most `MAX_HELD`). */
  get held(): number {
    return this.#heldCount;
  }

  /** Sends the oldest held text of `turnId` as it stands (placed or not). */
  #sendOldest(turnId: string, list: Held[]): void {
    const old = list.shift()!;
    this.#heldCount--;
    if (list.length === 0) this.#held.delete(turnId);
    this.#send(turnId, old, old.at ?? this.#starts.get(turnId));
  }

  /** A text of a turn already cut: its audio will not be heard. */
  unheard(turnId: string, text: string, final: boolean): void {
    this.#send(turnId, { id: 0, text, final }, undefined, false);
  }

  /**
   * The engine corrected the text of turn `turnId` to what was said before it was
   * interrupted: a final transcript of that turn replaces its text (a record, not a
   * caption: no media time).
   */
  replace(turnId: string, text: string): void {
    this.host.send({
      type: "transcript",
      turn_id: turnId,
      role: "avatar",
      text,
      final: true,
    });
  }

  /** The stream reached mark `id` of `turnId` at `mediaTimeMs`. */
  placed(turnId: string, id: number, mediaTimeMs: number): void {
    const held = this.#held.get(turnId)?.find((h) => h.id === id);
    if (!held) return;
    held.at = mediaTimeMs;
    this.#release(turnId);
  }

  /** The turn's audible speech started at `mediaTimeMs`: its placed texts go out. */
  started(turnId: string, mediaTimeMs: number): void {
    if (!this.#starts.has(turnId) && this.#starts.size >= MAX_STARTS) {
      this.#starts.delete(this.#starts.keys().next().value!);
    }
    this.#starts.set(turnId, mediaTimeMs);
    this.#release(turnId);
  }

  /**
   * The turn is over (all its audio streamed, or cut): every text still held goes out,
   * in order; those whose mark the stream never reached as not heard.
   */
  finish(turnId: string): void {
    const list = this.#held.get(turnId) ?? [];
    this.#held.delete(turnId);
    this.#heldCount -= list.length;
    const start = this.#starts.get(turnId);
    this.#starts.delete(turnId);
    for (const h of list) {
      if (h.at === undefined) this.#send(turnId, h, undefined, false);
      else this.#send(turnId, h, Math.max(h.at, start ?? h.at));
    }
  }

  /** A new stream restarts media time: speech starts of the old one no longer hold. */
  newStream(): void {
    this.#starts.clear();
  }

  /** Sends the leading placed texts of `turnId` once its speech started. */
  #release(turnId: string): void {
    const start = this.#starts.get(turnId);
    const list = this.#held.get(turnId);
    if (start === undefined || !list) return;
    while (list.length > 0 && list[0].at !== undefined) {
      const h = list.shift()!;
      this.#heldCount--;
      this.#send(turnId, h, Math.max(h.at!, start));
    }
    if (list.length === 0) this.#held.delete(turnId);
  }

  #send(
    turnId: string,
    h: Held,
    mediaTimeMs: number | undefined,
    heard = true,
  ): void {
    this.host.send({
      type: "transcript",
      turn_id: turnId,
      role: "avatar",
      text: h.text,
      final: h.final,
      ...(mediaTimeMs === undefined ? {} : { media_time_ms: mediaTimeMs }),
      ...(heard ? {} : { heard: false }),
    });
  }
}
