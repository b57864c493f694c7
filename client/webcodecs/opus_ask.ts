/**
 * Asking the media socket for Opus for WebCodecs playback (DECISIONS 6, `media.config`:
 * short frames, no AAC lookahead to hold back), once a socket, where Opus is known to
 * decode (./support.ts `opusKnown`).
 */
import { opusKnown } from "./support.ts";

export class OpusAsk {
  /** This socket was asked for Opus. */
  #asked = false;

  constructor(
    private readonly send: (msg: Record<string, unknown>) => void,
    private readonly known: () => boolean | null = opusKnown,
  ) {}

  /**
   * A new WebCodecs stream of type `mime`: asks for Opus when the stream is AAC and
   * Opus decodes here; a fresh `media.init` follows. True when it asked now: the AAC
   * stream's audio is then not decoded (the Opus stream comes one round trip later, and
   * a 96-kHz AAC output would be closed for it: opening an AudioContext blocks the
   * page). A socket asked once that answers AAC again is not asked again.
   */
  stream(mime: string): boolean {
    if (this.#asked || /\bopus\b/.test(mime) || this.known() !== true) {
      return false;
    }
    this.#asked = true;
    this.send({ type: "media.config", audio: "opus" });
    return true;
  }

  /** A new socket is open: its stream starts in AAC, and it is asked once. */
  socketOpened(): void {
    this.#asked = false;
  }
}
