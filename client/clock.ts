/**
 * The playback clock the page's timed events follow (`avatar.speaking`, captions): what
 * is seen and heard now, in `media_time_ms` units. On the `<video>` paths (MSE) it is the
 * video's presentation time; with WebCodecs the audio worklet's heard time; on WebRTC
 * the sender's wall clock less the receiver's playout delay (docs/media-protocol.md).
 */

type VideoWithFrames = HTMLVideoElement & {
  requestVideoFrameCallback?: (cb: () => void) => number;
};

export class MediaClock {
  /**
   * `own`: the clock when the video's time is not it (WebRTC, WebCodecs); it answers
   * null when the video is the clock after all (a `<video>` path chosen later).
   */
  constructor(
    private readonly video: HTMLVideoElement,
    private readonly own?: () => number | null,
  ) {}

  /** Where playback is now, in `media_time_ms` units. */
  now(): number {
    return this.own?.() ?? this.video.currentTime * 1000;
  }

  /**
   * Calls `fn` once, soon enough to fire an event due at `dueMs`: on the next video
   * frame when the video is the clock, else by a timer at most 50 ms away (the clock
   * moves with the playout delay or the audio).
   */
  wake(dueMs: number, fn: () => void): void {
    const own = this.own?.();
    const v = this.video as VideoWithFrames;
    if (own !== null && own !== undefined) {
      setTimeout(fn, Math.max(0, Math.min(50, dueMs - own)));
    } else if (typeof v.requestVideoFrameCallback === "function") {
      v.requestVideoFrameCallback(fn);
    } else {
      requestAnimationFrame(fn);
    }
  }
}
