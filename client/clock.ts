/**
 * The playback clock the page's timed events follow (`avatar.speaking`, captions): what
 * is seen and heard now, in `media_time_ms` units. On the `<video>` paths (MSE) it is the
 * video's presentation time; with WebCodecs the audio worklet's heard time; on WebRTC
 * the sender's wall clock less the receiver's playout delay (docs/media-protocol.md).
 */

type VideoWithFrames = HTMLVideoElement & {
  requestVideoFrameCallback?: (cb: () => void) => number;
  cancelVideoFrameCallback?: (handle: number) => void;
};

/**
 * On the video's clock a timer wakes an event no later than this after it is due (nor
 * sooner than the floor: a paused video does not spin), whether or not a frame is
 * presented: a page that presents no frames for a while (a background tab, a starved
 * compositor) still hears what it plays.
 */
const VIDEO_WAKE_MS = { min: 20, max: 50 };

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
   * Calls `fn` once, soon enough to fire an event due at `dueMs`: by a timer at most
   * 50 ms away (the clock moves with the playout delay or the audio); when the video
   * is the clock, on the next video frame if that comes sooner.
   */
  wake(dueMs: number, fn: () => void): void {
    const own = this.own?.();
    if (own !== null && own !== undefined) {
      setTimeout(fn, Math.max(0, Math.min(50, dueMs - own)));
      return;
    }
    const v = this.video as VideoWithFrames;
    let done = false;
    let cancelFrame = () => {};
    const timer = setTimeout(
      () => {
        if (done) return;
        done = true;
        cancelFrame();
        fn();
      },
      Math.max(
        VIDEO_WAKE_MS.min,
        Math.min(
          VIDEO_WAKE_MS.max,
          (dueMs - v.currentTime * 1000) / (v.playbackRate || 1),
        ),
      ),
    );
    const onFrame = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      fn();
    };
    if (typeof v.requestVideoFrameCallback === "function") {
      const handle = v.requestVideoFrameCallback(onFrame);
      cancelFrame = () => v.cancelVideoFrameCallback?.(handle);
    } else {
      const handle = requestAnimationFrame(onFrame);
      cancelFrame = () => cancelAnimationFrame(handle);
    }
  }
}
