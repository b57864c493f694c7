/**
 * The picture side of WebCodecs playback: which decoded frame is due on the audio
 * clock, and the sink it is drawn on (remade when the picture size changes).
 */

/** Where decoded frames go: a 2D canvas, or the stacked-alpha compositor. */
export interface FrameSink {
  draw(frame: VideoFrame): void;
  close(): void;
}

/**
 * The index of the frame to draw now among `frames` (in time order), or -1: the first
 * frame of a stream at once, so a picture shows before audio starts; else the newest
 * frame due on the heard clock `nowUs`, a frame being due one frame early. The picture
 * then leads the sound by up to a frame (16 ms p50 in Chromium, `bench:transports`),
 * the direction viewers notice least, and each frame waits a frame less for its audio
 * to be heard: glass to glass 81 → 62 ms. With no audio clock (not open yet, or held
 * for a gesture) the newest frame, live; with a clock that has not started, none.
 */
export function dueFrame(
  frames: VideoFrame[],
  nowUs: number | null,
  first: boolean,
  audioRuns: boolean,
): number {
  if (frames.length === 0) return -1;
  if (first) return 0;
  if (nowUs === null) return audioRuns ? -1 : frames.length - 1;
  let due = -1;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i];
    if (f.timestamp - (f.duration ?? 0) <= nowUs) due = i;
    else break;
  }
  return due;
}

/** A sink made for the current picture size; a sink that cannot be made is said once. */
export class SizedSink {
  #sink: FrameSink | null = null;
  #w = 0;
  #h = 0;
  #failed = false;

  constructor(
    private readonly make: (width: number, height: number) => FrameSink,
    private readonly onError: (message: string) => void,
  ) {}

  /** Draws `frame` (the caller closes it); false when there is nowhere to draw. */
  draw(frame: VideoFrame): boolean {
    const w = frame.displayWidth;
    const h = frame.displayHeight;
    if (!this.#sink || w !== this.#w || h !== this.#h) {
      this.close();
      try {
        this.#sink = this.make(w, h);
        this.#w = w;
        this.#h = h;
      } catch (err) {
        // Nowhere to draw (no canvas context): said once, the frames are dropped.
        if (!this.#failed) {
          this.onError(err instanceof Error ? err.message : String(err));
        }
        this.#failed = true;
        return false;
      }
    }
    this.#sink.draw(frame);
    return true;
  }

  close(): void {
    this.#sink?.close();
    this.#sink = null;
  }
}
