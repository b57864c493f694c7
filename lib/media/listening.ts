/**
 * Whether the user is speaking, from the microphone audio the session receives (all
 * engines, whatever their own voice detection): loud enough over its own noise floor
 * for 150 ms, and quiet again for 800 ms. The avatar listens meanwhile (the renderer's
 * `listen`, lib/ports/render.ts).
 */

/** Voice this far over the noise floor (dB), and at least `MIN_DB` dBFS. */
const OVER_FLOOR_DB = 12;
const MIN_DB = -50;
/** Speech for this long starts a "speaking"; quiet for this long ends it (ms). */
const ONSET_MS = 150;
const RELEASE_MS = 800;

/** The user's voice activity on one session's microphone audio. */
export class UserVoice {
  #speaking = false;
  #voiced = 0;
  #quiet = 0;
  #floor = -60;

  constructor(private readonly onChange: (speaking: boolean) => void) {}

  get speaking(): boolean {
    return this.#speaking;
  }

  /** One chunk of microphone audio (PCM16 mono at `rate`). */
  push(pcm: Int16Array, rate: number): void {
    if (pcm.length === 0 || !(rate > 0)) return;
    let sum = 0;
    for (let i = 0; i < pcm.length; i++) sum += pcm[i] * pcm[i];
    const db = 10 * Math.log10(sum / pcm.length / (32768 * 32768) + 1e-12);
    const ms = pcm.length * 1000 / rate;
    // The floor follows quiet quickly and loud slowly (a second's worth of speech
    // lifts it by a few dB at most).
    const k = Math.min(1, ms / (db < this.#floor ? 200 : 8000));
    this.#floor += (db - this.#floor) * k;
    const voiced = db > Math.max(MIN_DB, this.#floor + OVER_FLOOR_DB);
    if (voiced) {
      this.#voiced += ms;
      this.#quiet = 0;
    } else {
      this.#quiet += ms;
      if (this.#quiet >= ONSET_MS) this.#voiced = 0;
    }
    const next = this.#speaking
      ? this.#quiet < RELEASE_MS
      : this.#voiced >= ONSET_MS;
    if (next !== this.#speaking) {
      this.#speaking = next;
      this.onChange(next);
    }
  }

  /** The user stopped being heard at once (the socket went away). */
  reset(): void {
    this.#voiced = 0;
    this.#quiet = 0;
    if (this.#speaking) {
      this.#speaking = false;
      this.onChange(false);
    }
  }
}
