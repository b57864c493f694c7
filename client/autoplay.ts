/**
 * The browsers' autoplay policy, for the player's media (./playback.ts): sound that may
 * not start never holds the picture back. A `<video>` refused with sound plays muted
 * (muted here, unmuted again by `play()` after a user gesture); WebCodecs audio whose
 * context stays suspended after one resume waits for that gesture while the picture
 * runs live, silent. Either way the page hears `autoplay_blocked` once.
 */
import type { WebCodecsPlayback } from "./webcodecs/player.ts";

/** Whether the browser says audio contexts may start without a gesture. */
function audioContextsAllowed(): boolean {
  const nav = globalThis.navigator as {
    getAutoplayPolicy?: (type: string) => string;
  } | undefined;
  try {
    return nav?.getAutoplayPolicy?.("audiocontext") === "allowed";
  } catch {
    return false;
  }
}

export class Autoplay {
  #blocked = false;
  #resumeTried = false;
  /** The video was muted here so that it could start without a gesture. */
  #mutedByUs = false;

  constructor(
    private readonly video: HTMLVideoElement,
    private readonly onBlocked: () => void,
  ) {}

  /**
   * WebCodecs: resumes its suspended audio once; still suspended, it is blocked —
   * unless the browser says its policy allows audio contexts (Firefox's
   * `navigator.getAutoplayPolicy`), where the resume is only slow (Firefox opens its
   * audio stream for it: the next media segment found it still suspended).
   */
  startWebCodecs(wc: WebCodecsPlayback): void {
    if (this.#blocked || !wc.hasMedia || !wc.suspended) return;
    // An audio context that stays suspended after a resume waits for a gesture.
    if (this.#resumeTried) {
      if (audioContextsAllowed()) return;
      this.#blocked = true;
      this.onBlocked();
    } else void wc.play();
    this.#resumeTried = true;
  }

  /** The `<video>`: plays it when paused with something to play (`playable`). */
  startVideo(playable: boolean): void {
    const v = this.video;
    if (!v.paused || !playable) return;
    // Autoplay refused: wait for `play()`, unless muted here (then it restarts muted,
    // e.g. on a takeover's new stream).
    if (this.#blocked && !this.#mutedByUs) return;
    v.play().catch((err) => {
      if (!(err instanceof DOMException) || err.name !== "NotAllowedError") {
        return;
      }
      if (this.#mutedByUs) {
        this.#mutedByUs = false;
        v.muted = false;
        return;
      }
      if (this.#blocked) return;
      this.#blocked = true;
      this.onBlocked();
      if (v.muted) return;
      this.#mutedByUs = true;
      v.muted = true;
      this.startVideo(playable);
    });
  }

  /**
   * Starts playback (with sound) after a user gesture: `wc`'s audio when WebCodecs
   * plays, else the video. When the browser still refuses the sound, the video goes on
   * muted (and this rejects).
   */
  async play(wc: WebCodecsPlayback | null): Promise<void> {
    this.#blocked = false;
    this.#resumeTried = false;
    if (wc) return await wc.play();
    const v = this.video;
    const mutedByUs = this.#mutedByUs;
    this.#mutedByUs = false;
    if (mutedByUs) v.muted = false;
    try {
      await v.play();
    } catch (err) {
      if (mutedByUs) {
        this.#mutedByUs = true;
        this.#blocked = true;
        v.muted = true;
        void v.play().catch(() => {});
      }
      throw err;
    }
  }
}
