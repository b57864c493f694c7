/**
 * The turns of one live session (DECISIONS 6, 7): user and avatar turns on the socket,
 * the avatar's speech on the stream's timeline (`avatar.speaking`), and cutting the
 * avatar off — on the browser's `interrupt`, the engine's `response.cancel` or a
 * provider's barge-in: its queued audio is dropped at once, the engine hears how much
 * of the response was streamed (`played_ms`), and the browser gets `turn.interrupted`
 * once the media before the cut has gone out. An avatar turn ends (`turn.end`) once all
 * its audio went into the stream, not when the engine finished sending it (engines send
 * far ahead of real time); until then it can still be cut. Avatar transcripts go out on
 * the media timeline (./captions.ts).
 */
import type { EngineConnection } from "../ports/providers.ts";
import type { RenderSession, SpeechEvent } from "../ports/render.ts";
import { Captions } from "./captions.ts";
import type { ServerMessage } from "./protocol.ts";

/** How long a cut waits for the renderer's cut event before reporting it anyway. */
export const CUT_EVENT_WAIT_MS = 2000;
/** Cut responses remembered, so their audio still in flight is dropped. */
const MAX_CUT_RESPONSES = 32;

/** What the turns need from the live session they belong to. */
export interface TurnsHost {
  send(msg: ServerMessage): void;
  render(): RenderSession | null;
  engine(): EngineConnection | null;
  /**
   * Whether the media goes out (so the renderer's cut event will come): a socket's fMP4
   * stream, or on webrtc_sfu the RTP output, whatever the sockets do.
   */
  streaming(): boolean;
  /**
   * The engine sent more audio ahead of the stream than the renderer holds
   * (`MAX_AGENT_AUDIO_AHEAD_MS`): the session ends as a provider failure.
   */
  overflow(): void;
}

/** An avatar turn whose response ended while its audio is still being streamed. */
interface Ending {
  /** The engine's response; null for text outside any response (a turn of its own). */
  responseId: string | null;
  turnId: string;
  timer?: ReturnType<typeof setTimeout>;
}

interface Cut {
  done: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

export class Turns {
  #seq = 0;
  #userTurn: string | null = null;
  /** Open avatar turns by the engine's response id. */
  #byResponse = new Map<string, string>();
  #current: { responseId: string; turnId: string } | null = null;
  /** The turn `avatar.speaking` true was last sent for (until its false). */
  #speaking: string | null = null;
  /** That `avatar.speaking` true message (a webrtc_sfu takeover gets it again). */
  #speakingMsg: ServerMessage | null = null;
  #cuts = new Map<string, Cut>();
  #cutResponses = new Set<string>();
  /** Turns waiting for their audio to be streamed, oldest first. */
  #ending = new Map<string, Ending>();
  /** Where (performance.now()) the audio pushed so far ends if played at real time. */
  #playsUntil = 0;
  #overflowed = false;
  /** The avatar turn that last got text (a correction replaces its text). */
  #lastSpoken: string | null = null;
  readonly #captions: Captions;

  constructor(private readonly host: TurnsHost) {
    this.#captions = new Captions(host);
  }

  #nextTurn(): string {
    return `turn_${++this.#seq}`;
  }

  /** The engine started a response: the avatar's turn. */
  responseStart(responseId: string): void {
    // One response at a time: a start ends the turns of any that never ended.
    for (const [rid, old] of this.#byResponse) {
      if (!this.#cuts.has(old)) this.#endTurn(rid, old);
    }
    this.#byResponse.clear();
    const turnId = this.#nextTurn();
    this.#byResponse.set(responseId, turnId);
    this.#current = { responseId, turnId };
    this.host.send({ type: "turn.start", turn_id: turnId, role: "avatar" });
  }

  /** The current response, unless it was cut. */
  #live(): { responseId: string; turnId: string } | null {
    const current = this.#current;
    return current && !this.#cutResponses.has(current.responseId)
      ? current
      : null;
  }

  /**
   * Agent audio of the current response, tagged with its turn for the renderer. Audio
   * of a cut response (still in flight) is dropped until the next response starts.
   */
  agentAudio(pcm: Int16Array, rate: number): void {
    const current = this.#current;
    if (this.#overflowed) return;
    if (current && this.#cutResponses.has(current.responseId)) return;
    const render = this.host.render();
    if (!render) return;
    if (!render.pushAudio(pcm, rate, current?.turnId)) {
      this.#overflowed = true;
      this.host.overflow();
      return;
    }
    const now = performance.now();
    this.#playsUntil = Math.max(this.#playsUntil, now) +
      (pcm.length * 1000) / rate;
  }

  /**
   * The engine finished response `responseId`; its turn ends (`turn.end`) once all its
   * audio went into the stream.
   */
  responseEnd(responseId: string): void {
    const turnId = this.#byResponse.get(responseId);
    if (!turnId) return;
    this.#byResponse.delete(responseId);
    if (this.#current?.turnId === turnId) this.#current = null;
    // A cut turn ends with its `turn.interrupted`.
    if (!this.#cuts.has(turnId)) this.#endTurn(responseId, turnId);
  }

  /** Ends `turnId` once the renderer streamed all its audio (or at a bound past it). */
  #endTurn(responseId: string | null, turnId: string): void {
    if (this.#ending.has(turnId)) return;
    const render = this.host.render();
    const entry: Ending = { responseId, turnId };
    this.#ending.set(turnId, entry);
    if (!render) return this.#ended(turnId);
    // If the renderer's event never comes (its stream failed meanwhile), end anyway.
    const left = Math.max(0, this.#playsUntil - performance.now());
    entry.timer = setTimeout(
      () => this.#ended(turnId),
      left + CUT_EVENT_WAIT_MS,
    );
    const now = render.endAudio(turnId);
    if (now === true) this.#ended(turnId);
    else if (now !== false) void now.then((n) => n && this.#ended(turnId));
  }

  /** All audio of an ending turn was streamed: its texts and its `turn.end` go out. */
  #ended(turnId: string): void {
    const entry = this.#ending.get(turnId);
    if (!entry) return;
    this.#ending.delete(turnId);
    clearTimeout(entry.timer);
    if (this.#cuts.has(turnId)) return;
    if (this.#speaking === turnId) this.#setSilent();
    this.#captions.finish(turnId);
    this.host.send({ type: "turn.end", turn_id: turnId });
  }

  /**
   * A transcript from the engine (`agent` is the browser's `avatar`). `audioMs`: where
   * in its response's audio an agent text's audio begins, when the engine says (text
   * sent after its audio); by default after the audio received so far.
   */
  transcript(
    role: "user" | "agent",
    text: string,
    final: boolean,
    audioMs?: number,
  ): void {
    if (role === "user") {
      this.userTranscript(text, final);
      return;
    }
    const current = this.#current;
    if (current && this.#cutResponses.has(current.responseId)) {
      // Text of a cut response still in flight: its audio is dropped, never heard.
      this.#lastSpoken = current.turnId;
      this.#captions.unheard(current.turnId, text, final);
      return;
    }
    if (current) {
      this.#lastSpoken = current.turnId;
      this.#captions.add(current.turnId, text, final, audioMs);
      return;
    }
    // Text outside any response (e.g. after it ended): a turn of its own, placed after
    // the audio queued before it.
    const turnId = this.#nextTurn();
    this.#lastSpoken = turnId;
    this.host.send({ type: "turn.start", turn_id: turnId, role: "avatar" });
    this.#captions.add(turnId, text, final);
    this.#endTurn(null, turnId);
  }

  /** The engine corrected its latest turn's text (see `Captions.replace`). */
  correction(text: string): void {
    if (this.#lastSpoken) this.#captions.replace(this.#lastSpoken, text);
  }

  /** The user's words (typed, or recognized by the engine). */
  userTranscript(text: string, final: boolean): void {
    if (!this.#userTurn) {
      this.#userTurn = this.#nextTurn();
      this.host.send({
        type: "turn.start",
        turn_id: this.#userTurn,
        role: "user",
      });
    }
    this.host.send({
      type: "transcript",
      turn_id: this.#userTurn,
      role: "user",
      text,
      final,
    });
    if (final) {
      this.host.send({ type: "turn.end", turn_id: this.#userTurn });
      this.#userTurn = null;
    }
  }

  /** A speech event of the current stream (lib/render/speech.ts). */
  speech(event: SpeechEvent): void {
    const turnId = event.tag;
    if (turnId === undefined) return;
    if (event.mark !== undefined) {
      this.#captions.placed(turnId, event.mark, event.mediaTimeMs);
      return;
    }
    if (event.speaking) {
      this.#speaking = turnId;
      this.#speakingMsg = {
        type: "avatar.speaking",
        speaking: true,
        turn_id: turnId,
        media_time_ms: event.mediaTimeMs,
      };
      this.host.send(this.#speakingMsg);
      this.#captions.started(turnId, event.mediaTimeMs);
      return;
    }
    if (this.#speaking === turnId) {
      this.#setSilent();
      this.host.send({
        type: "avatar.speaking",
        speaking: false,
        turn_id: turnId,
        media_time_ms: event.mediaTimeMs,
      });
    }
    if (event.cut) this.#finishCut(turnId, event.cut.playedMs);
    if (event.ended) this.#ended(turnId);
  }

  /** A new stream restarts media time: nothing is being heard on it yet. */
  newStream(): void {
    this.#setSilent();
    this.#captions.newStream();
  }

  /**
   * A new socket of a webrtc_sfu session (a takeover): the speech under way is sent
   * again, its time (the sender's wall clock) as valid on any socket.
   */
  replaySpeaking(): void {
    if (this.#speakingMsg) this.host.send(this.#speakingMsg);
  }

  #setSilent(): void {
    this.#speaking = null;
    this.#speakingMsg = null;
  }

  /**
   * The turn a cut cuts: the live response's, else the newest whose response ended while
   * its audio is still being streamed (engines send ahead: `response.done` comes long
   * before the avatar finished saying it).
   */
  #heard(): { responseId: string; turnId: string } | null {
    const live = this.#live();
    if (live) return live;
    let heard: { responseId: string; turnId: string } | null = null;
    for (const e of this.#ending.values()) {
      if (e.responseId !== null && !this.#cuts.has(e.turnId)) {
        heard = { responseId: e.responseId, turnId: e.turnId };
      }
    }
    return heard;
  }

  /** The browser's `interrupt`: everything queued goes, the current turn is cut. */
  interrupt(): Promise<void> {
    return this.#cut(this.#heard(), { all: true, tellEngine: true });
  }

  /** The engine's `response.cancel`: that response's queued audio goes. */
  cancel(responseId: string): Promise<void> {
    const turnId = this.#byResponse.get(responseId) ??
      [...this.#ending.values()].find((e) => e.responseId === responseId)
        ?.turnId;
    return this.#cut(turnId ? { responseId, turnId } : null, {
      all: false,
      tellEngine: true,
      responseId,
    });
  }

  /**
   * A provider detected barge-in and stopped its response: cut what is queued, and tell
   * the provider how much was streamed (its adapter truncates where the protocol can).
   */
  bargeIn(): Promise<void> {
    return this.#cut(this.#heard(), { all: true, tellEngine: true });
  }

  async #cut(
    target: { responseId: string; turnId: string } | null,
    o: { all: boolean; tellEngine: boolean; responseId?: string },
  ): Promise<void> {
    const render = this.host.render();
    const engine = this.host.engine();
    if (o.responseId) this.#markCut(o.responseId);
    if (!target) {
      // Nothing to cut but stray audio; a browser interrupt still reaches the engine.
      if (o.all) await render?.interrupt({ all: true });
      if (o.tellEngine && !o.responseId) engine?.interrupt();
      return;
    }
    if (this.#cuts.has(target.turnId)) return;
    this.#markCut(target.responseId);
    const cut: Cut = { done: false };
    this.#cuts.set(target.turnId, cut);
    const result =
      await render?.interrupt({ tag: target.turnId, all: o.all }) ??
        null;
    const playedMs = result?.playedMs ?? 0;
    if (o.tellEngine) {
      engine?.interrupt({ responseId: target.responseId, playedMs });
    }
    if (!cut.done) {
      if (result && this.host.streaming()) {
        // The renderer's cut event follows the media before the cut; if it never
        // comes (the stream failed meanwhile), report the cut anyway.
        cut.timer = setTimeout(
          () => this.#finishCut(target.turnId, playedMs),
          CUT_EVENT_WAIT_MS,
        );
      } else {
        this.#finishCut(target.turnId, playedMs);
      }
    }
  }

  #finishCut(turnId: string, playedMs: number): void {
    const cut = this.#cuts.get(turnId);
    if (!cut || cut.done) return;
    cut.done = true;
    clearTimeout(cut.timer);
    clearTimeout(this.#ending.get(turnId)?.timer);
    this.#ending.delete(turnId);
    if (this.#speaking === turnId) this.#setSilent();
    this.#captions.finish(turnId);
    for (const [rid, tid] of this.#byResponse) {
      if (tid === turnId) this.#byResponse.delete(rid);
    }
    this.host.send({
      type: "turn.interrupted",
      turn_id: turnId,
      played_ms: playedMs,
    });
    this.host.send({ type: "turn.end", turn_id: turnId });
    // Keep the record bounded: finished cuts are only needed to ignore late ends.
    if (this.#cuts.size > MAX_CUT_RESPONSES) {
      for (const [id, c] of this.#cuts) {
        if (c.done) this.#cuts.delete(id);
        if (this.#cuts.size <= MAX_CUT_RESPONSES / 2) break;
      }
    }
  }

  #markCut(responseId: string): void {
    this.#cutResponses.add(responseId);
    if (this.#cutResponses.size > MAX_CUT_RESPONSES) {
      this.#cutResponses.delete(this.#cutResponses.values().next().value!);
    }
  }

  /** Stops pending timers (teardown). */
  close(): void {
    for (const cut of this.#cuts.values()) clearTimeout(cut.timer);
    for (const e of this.#ending.values()) clearTimeout(e.timer);
  }
}
