/**
 * Where a built-in session's speech events go (./builtin_session.ts): to the fMP4
 * viewer with the fragment that covers them, in the viewer's time; while the RTP output
 * of a webrtc_sfu session runs, to its sink in wall-clock time — and, kept at their
 * position in the fMP4 run, to an fMP4 viewer of the same session (a webrtc_sfu socket
 * served fMP4 instead, DECISIONS 11).
 */
import type { Logger } from "../log.ts";
import { MAX_AUDIO_MARKS } from "./agent_audio.ts";
import type { RenderSink, RtpSink, SpeechEvent } from "../ports/render.ts";
import type { RtpOutput } from "./rtp.ts";
import { samplesToMs, type SpeechTimeline } from "./speech.ts";

export class SpeechRoutes {
  /** While the RTP output runs: the events it delivered, at their fMP4 run position. */
  #runSpeech: { pos: number; event: SpeechEvent }[] = [];

  constructor(
    private readonly speech: SpeechTimeline,
    private readonly log: Logger,
  ) {}

  /** A new fMP4 viewer while RTP runs: it hears of the speech under way, if any. */
  viewerJoinedBesideRtp(): void {
    const tag = this.speech.speakingTag;
    this.#runSpeech = tag === null ? [] : [{
      pos: 0,
      event: { speaking: true, tag, mediaTimeMs: 0 },
    }];
  }

  /** The RTP output ended: what it kept for the fMP4 viewer is void. */
  rtpEnded(): void {
    this.#runSpeech = [];
  }

  /**
   * Hands the RTP sink the speech events of the audio its encoder has taken so far,
   * in the wall clock of the take (./rtp.ts `wallMsAt`); where a watched fMP4 run
   * stood against the RTP output at that frame (its `runOffset`), keeps them for its
   * viewer too.
   */
  toRtp(rtp: { out: RtpOutput; sink: RtpSink }): void {
    if (!this.speech.hasPending) return;
    for (
      const { pos, event } of this.speech.deliveredAt(rtp.out.takenSamples)
    ) {
      try {
        rtp.sink.onSpeech?.({ ...event, mediaTimeMs: rtp.out.wallMsAt(pos) });
      } catch (err) {
        this.log.error("render rtp sink failed", { err });
      }
      const toRun = rtp.out.runOffsetAt(pos);
      if (toRun !== null && this.#runSpeech.length < MAX_AUDIO_MARKS) {
        this.#runSpeech.push({ pos: pos + toRun, event });
      }
    }
  }

  /**
   * Hands `sink` the speech events the fragment just sent to it covered: those before
   * its audio's end (the stream's audio time is the input's), in the viewer's time;
   * `rtp`: whether the RTP output runs (the events then come from what it kept).
   */
  toSink(
    sink: RenderSink,
    audioEnd: number,
    viewerStart: number,
    rtp: boolean,
  ): void {
    const startMs = samplesToMs(viewerStart);
    let events: SpeechEvent[] = [];
    if (rtp) {
      while (
        this.#runSpeech.length > 0 && this.#runSpeech[0].pos < audioEnd
      ) {
        const { pos, event } = this.#runSpeech.shift()!;
        events.push({ ...event, mediaTimeMs: samplesToMs(pos) });
      }
    } else if (this.speech.hasPending) {
      events = this.speech.delivered(audioEnd);
    }
    for (const e of events) {
      try {
        sink.onSpeech?.({
          ...e,
          mediaTimeMs: Math.max(0, e.mediaTimeMs - startMs),
        });
      } catch (err) {
        this.log.error("render sink failed", { err });
      }
    }
  }
}
