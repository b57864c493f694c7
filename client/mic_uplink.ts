/**
 * The microphone's way up the media socket: starts the capture (./mic.ts), declares its
 * rate with `audio.config`, mutes, and sends frames in real time, dropping rather than
 * queueing behind a stalled connection.
 */
import { Microphone, type MicrophoneOptions } from "./mic.ts";

const MAX_MIC_BUFFERED = 256 * 1024;

/** The microphone of one player, sent on whichever socket is current. */
export class MicUplink {
  #mic: Microphone | null = null;
  #muted = false;
  #stopped = false;
  #framesSent = 0;

  /**
   * `socket` gives the current socket (or null); `onUnavailable` hears why the
   * microphone could not start.
   */
  constructor(
    private readonly socket: () => WebSocket | null,
    private readonly onUnavailable: (err: unknown) => void,
  ) {}

  get muted(): boolean {
    return this.#muted;
  }

  /** Frames sent so far. */
  get framesSent(): number {
    return this.#framesSent;
  }

  /** Asks for the microphone and starts sending; failure goes to `onUnavailable`. */
  async start(options: MicrophoneOptions): Promise<void> {
    try {
      const mic = await Microphone.start(
        options,
        (frames) => this.#send(frames),
      );
      if (this.#stopped) return mic.stop();
      this.#mic = mic;
      mic.enabled = !this.#muted;
      this.sendConfig();
    } catch (err) {
      this.onUnavailable(err);
    }
  }

  /** Declares the capture rate on the socket (when both are up). */
  sendConfig(): void {
    const ws = this.socket();
    if (this.#mic && ws?.readyState === WebSocket.OPEN) {
      ws.send(
        JSON.stringify({
          type: "audio.config",
          sample_rate: this.#mic.sampleRate,
        }),
      );
    }
  }

  /** Stops sending (the capture keeps running, silent). */
  mute(): void {
    this.#muted = true;
    if (this.#mic) this.#mic.enabled = false;
  }

  unmute(): void {
    this.#muted = false;
    if (this.#mic) this.#mic.enabled = true;
  }

  /** Resumes a capture the browser suspended (after a sleeping tab). */
  resume(): void {
    this.#mic?.resume();
  }

  /** Stops the capture for good; a capture still starting is stopped when it arrives. */
  stop(): void {
    this.#stopped = true;
    this.#mic?.stop();
    this.#mic = null;
  }

  #send(frames: Uint8Array[]): void {
    const ws = this.socket();
    if (this.#muted || ws?.readyState !== WebSocket.OPEN) return;
    for (const f of frames) {
      // Real-time audio: drop rather than queue behind a stalled connection.
      if (ws.bufferedAmount > MAX_MIC_BUFFERED) return;
      ws.send(f);
      this.#framesSent++;
    }
  }
}
