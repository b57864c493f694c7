/**
 * The turns of one live session (DECISIONS 6, 7): user and avatar turns on the socket,
 * the avatar's speech on the stream's timeline (`avatar.speaking`), and cutting the
 * avatar off — on the browser's `interrupt`, the engine's `response.cancel` or a
 * provider's barge-in: its queued audio is dropped at once, the engine hears how much
 * of the response was streamed (`played_ms`), and the browser gets `turn.interrupted`
 * once the media before the cut has gone out.
 */
import type { EngineConnection } from "../providers/port.ts";
import type { RenderSession, SpeechEvent } from "../render/port.ts";
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

  constructor(private readonly host: TurnsHost) {}

  #nextTurn(): string {
    return `turn_${++this.#seq}`;
  }

  /** The engine started a response: the avatar's turn. */
  responseStart(responseId: string): void {
    // One response at a time: a start ends the turns of any that never ended.
    for (const old of this.#byResponse.values()) {
      if (!this.#cuts.has(old)) {
        this.host.send({ type: "turn.end", turn_id: old });
      }
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
    if (current && this.#cutResponses.has(current.responseId)) return;
    this.host.render()?.pushAudio(pcm, rate, current?.turnId);
  }

  responseEnd(responseId: string): void {
    const turnId = this.#byResponse.get(responseId);
    if (!turnId) return;
    this.#byResponse.delete(responseId);
    if (this.#current?.turnId === turnId) this.#current = null;
    // A cut turn ends with its `turn.interrupted`.
    if (!this.#cuts.has(turnId)) {
      this.host.send({ type: "turn.end", turn_id: turnId });
    }
  }

  /** A transcript from the engine (`agent` is the browser's `avatar`). */
  transcript(role: "user" | "agent", text: string, final: boolean): void {
    if (role === "user") {
      this.userTranscript(text, final);
      return;
    }
    const current = this.#live()?.turnId;
    if (current) {
      this.host.send({
        type: "transcript",
        turn_id: current,
        role: "avatar",
        text,
        final,
      });
      return;
    }
    // Text outside any response (e.g. after it ended): a turn of its own.
    const turnId = this.#nextTurn();
    this.host.send({ type: "turn.start", turn_id: turnId, role: "avatar" });
    this.host.send({
      type: "transcript",
      turn_id: turnId,
      role: "avatar",
      text,
      final,
    });
    this.host.send({ type: "turn.end", turn_id: turnId });
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
    if (event.speaking) {
      this.#speaking = turnId;
      this.#speakingMsg = {
        type: "avatar.speaking",
        speaking: true,
        turn_id: turnId,
        media_time_ms: event.mediaTimeMs,
      };
      this.host.send(this.#speakingMsg);
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
  }

  /** A new stream restarts media time: nothing is being heard on it yet. */
  newStream(): void {
    this.#setSilent();
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

  /** The browser's `interrupt`: everything queued goes, the current turn is cut. */
  interrupt(): Promise<void> {
    return this.#cut(this.#live(), { all: true, tellEngine: true });
  }

  /** The engine's `response.cancel`: that response's queued audio goes. */
  cancel(responseId: string): Promise<void> {
    const turnId = this.#byResponse.get(responseId);
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
    return this.#cut(this.#live(), { all: true, tellEngine: true });
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
    if (this.#speaking === turnId) this.#setSilent();
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
  }
}
