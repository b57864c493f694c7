/**
 * The player's timed events (client/playback.ts): `avatar.speaking` and captions,
 * fired on the playback clock (./clock.ts) — the `<video>`'s time, the WebCodecs
 * audio's heard time, or on WebRTC the sender's clock less the lag measured at each
 * speech start (./rtc_clock.ts).
 */
import { CaptionSchedule } from "./captions.ts";
import { MediaClock } from "./clock.ts";
import type { CaptionDetail, SpeakingDetail } from "./player_types.ts";
import { RtcClock, type RtcClockSource } from "./rtc_clock.ts";
import { SpeakingSchedule } from "./speaking.ts";

export interface TimedEventsOptions {
  video: HTMLVideoElement;
  /** Whether WebRTC plays now (else fMP4). */
  rtc: () => boolean;
  /** The WebRTC receiver's delay and audio energy. */
  rtcSource: RtcClockSource;
  /** The fMP4 clock when it is not the video's (WebCodecs; -1 before audio plays). */
  fmp4Clock: () => number | null;
  onSpeaking: (detail: SpeakingDetail) => void;
  onCaption: (detail: CaptionDetail) => void;
}

export class TimedEvents {
  readonly #speech: SpeakingSchedule;
  readonly #captions: CaptionSchedule;
  readonly #rtcClock: RtcClock;
  readonly #rtc: () => boolean;

  constructor(o: TimedEventsOptions) {
    this.#rtc = o.rtc;
    this.#rtcClock = new RtcClock(o.rtcSource, () => this.check());
    const clock = new MediaClock(
      o.video,
      () => o.rtc() ? this.#rtcClock.now() : o.fmp4Clock(),
    );
    this.#speech = new SpeakingSchedule(clock, o.onSpeaking);
    this.#captions = new CaptionSchedule(clock, o.onCaption);
  }

  /** Whether the avatar is audibly speaking at the playback clock's time. */
  get speaking(): boolean {
    return this.#speech.speaking;
  }

  /** `avatar.speaking`: scheduled for when playback reaches it. */
  speech(detail: SpeakingDetail): void {
    if (this.#rtc() && detail.speaking) {
      this.#rtcClock.speechStarts(detail.media_time_ms);
    }
    this.#speech.add(detail);
  }

  /** A transcript: a caption when its audio is heard (./captions.ts). */
  caption(detail: CaptionDetail): void {
    this.#captions.add(detail);
  }

  /** The speech at and ahead of the playhead, up to `toMs` (./speaking.ts). */
  speechAhead(toMs: number): { speaking: boolean; nextStartMs: number | null } {
    return this.#speech.speechAhead(toMs);
  }

  /** A new stream or media: what was scheduled is settled, the lag measured anew. */
  reset(): void {
    this.#speech.reset();
    this.#captions.reset();
    this.#rtcClock.reset();
  }

  /** A new WebRTC viewer: the schedule goes on (the sender's clock), the lag anew. */
  newViewer(): void {
    this.#rtcClock.reset();
  }

  /** Fires what is due. */
  check(): void {
    this.#speech.check();
    this.#captions.check();
  }
}
