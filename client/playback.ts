/**
 * What plays in the browser client's `<video>` (client/browser.ts): the fMP4 stream over
 * MSE (client/mse.ts) for `websocket_fmp4` sessions, WebRTC from the SFU
 * (client/webrtc.ts) for `webrtc_sfu` ones; the `avatar.speaking` schedule on the
 * video's clock (client/speaking.ts); starting playback when autoplay allows it.
 *
 * Which one plays follows the socket, not the session's transport: a `webrtc.offer`
 * plays over WebRTC, a `media.init` over MSE (a browser that cannot play WebRTC is sent
 * the fMP4 stream on a session created `auto`, DECISIONS 11).
 */
import { LiveBuffer } from "./mse.ts";
import { SpeakingSchedule } from "./speaking.ts";
import { type IceServer, RtcPlayback, type SocketCandidate } from "./webrtc.ts";
import type { LiveBufferStats } from "./mse.ts";
import type { RtcStats } from "./webrtc.ts";
import type { SpeakingDetail } from "./player_types.ts";
import type { ServerMessage } from "./protocol.ts";

export interface PlaybackOptions {
  video: HTMLVideoElement;
  transport?: "webrtc_sfu" | "websocket_fmp4" | "auto";
  iceServers?: IceServer[];
  maxLatencyS: number;
  /** Sends a signalling message on the current socket (WebRTC). */
  send: (msg: Record<string, unknown>) => void;
  /** A non-fatal media error. */
  onError: (code: string, message: string) => void;
  /** Autoplay was refused (once, until `play()`). */
  onAutoplayBlocked: () => void;
  /** Media is flowing again: the connection is healthy. */
  onPlaying: () => void;
  /** The WebRTC connection failed for good: renegotiate on a new socket. */
  onFailed: () => void;
  /** The avatar starts or stops speaking at the video's current time. */
  onSpeaking: (detail: SpeakingDetail) => void;
}

/** The video side of one player: MSE or WebRTC, as the current socket streams. */
export class Playback {
  readonly #video: HTMLVideoElement;
  readonly #buffer: LiveBuffer;
  /** Made at the first `webrtc.offer`: media comes over WebRTC, not the socket. */
  #rtc: RtcPlayback | null = null;
  /** What the video plays now: WebRTC after an offer, MSE after a `media.init`. */
  #mode: "rtc" | "mse";
  #speech: SpeakingSchedule;
  readonly #o: PlaybackOptions;
  readonly #onAutoplayBlocked: () => void;
  readonly #onPlaying: () => void;
  #autoplayBlocked = false;
  /** The video was muted here so that it could start without a gesture. */
  #mutedByUs = false;

  constructor(o: PlaybackOptions) {
    this.#o = o;
    this.#video = o.video;
    this.#onAutoplayBlocked = o.onAutoplayBlocked;
    this.#onPlaying = o.onPlaying;
    this.#buffer = new LiveBuffer(o.video, {
      maxLatencyS: o.maxLatencyS,
      onError: o.onError,
      // Media arrived (only an open socket brings it): start the video now, not at
      // the next tick (throttled to about 1 s in a background tab).
      onAppended: () => this.#startIfPlayable(true),
    });
    this.#mode = o.transport === "webrtc_sfu" ? "rtc" : "mse";
    this.#speech = this.#schedule();
  }

  /**
   * The speaking schedule of the current mode. WebRTC: `media_time_ms` is the sender's
   * wall clock when the audio went out; it plays once the receiver's jitter buffer lets
   * it (docs/media-protocol.md). MSE: the video's presentation time.
   */
  #schedule(): SpeakingSchedule {
    const rtc = this.#mode === "rtc" ? this.#rtc : null;
    return new SpeakingSchedule(
      this.#video,
      this.#o.onSpeaking,
      rtc ? () => Date.now() - rtc.playoutDelayMs : undefined,
    );
  }

  /** Switches what the video plays, releasing the other; a new speaking clock. */
  #switchTo(mode: "rtc" | "mse"): void {
    if (this.#mode === mode && (mode === "mse" || this.#rtc)) return;
    this.#mode = mode;
    if (mode === "mse") this.#rtc?.close();
    else {
      this.#buffer.close();
      this.#rtc ??= new RtcPlayback(this.#video, {
        iceServers: this.#o.iceServers ?? [],
        send: this.#o.send,
        onError: this.#o.onError,
        // `webrtc.unsupported` went out: the server streams fMP4 instead (a session
        // created `auto`) or refuses with the fatal `unsupported_media`.
        onUnsupported: (why) => this.#o.onError("unsupported_media", why),
        // A track arrived (an offer came over the open socket): start the video now
        // rather than at the next tick, up to 250 ms later.
        onPlaying: () => {
          this.#o.onPlaying();
          this.#startIfPlayable(true);
        },
        onFailed: this.#o.onFailed,
      });
    }
    this.#speech.reset();
    this.#speech = this.#schedule();
  }

  /** Whether the avatar is audibly speaking at the video's current time. */
  get speaking(): boolean {
    return this.#speech.speaking;
  }

  get bufferStats(): LiveBufferStats {
    return this.#buffer.stats;
  }

  get rtcStats(): RtcStats {
    return this.#rtc?.stats ?? {
      peerConnections: 0,
      framesDecoded: 0,
      audioPacketsReceived: 0,
      playoutDelayMs: 0,
    };
  }

  /**
   * A media message of the socket (`media.init`, `avatar.speaking`, `webrtc.offer`,
   * `webrtc.candidate`); others are ignored.
   */
  handle(msg: ServerMessage): void {
    switch (msg.type) {
      case "media.init":
        return this.mediaInit(msg.mime);
      case "avatar.speaking":
        return this.speech({
          speaking: msg.speaking,
          turn_id: msg.turn_id,
          media_time_ms: msg.media_time_ms,
        });
      case "webrtc.offer":
        return this.offer(msg.sdp);
      case "webrtc.candidate":
        return this.candidate(msg.candidate);
    }
  }

  /** A binary socket frame: fMP4 media (ignored on WebRTC). */
  segment(data: ArrayBuffer): void {
    if (this.#mode === "mse") this.#buffer.append(data);
  }

  /** `media.init`: a new fMP4 stream (a stream is flowing: the connection is healthy). */
  mediaInit(mime: string): void {
    this.#switchTo("mse");
    this.#onPlaying();
    this.#buffer.reset(mime);
    this.#speech.reset();
  }

  /**
   * `webrtc.offer`: a new viewer. The speaking schedule goes on: its times are the
   * sender's wall clock, which no new viewer restarts.
   */
  offer(sdp: string): void {
    this.#switchTo("rtc");
    void this.#rtc?.offer(sdp);
  }

  /** `webrtc.candidate` from the SFU. */
  candidate(candidate: SocketCandidate | null): void {
    if (this.#mode === "rtc") void this.#rtc?.candidate(candidate);
  }

  /** `avatar.speaking`: scheduled for when playback reaches it. */
  speech(detail: SpeakingDetail): void {
    this.#speech.add(detail);
  }

  /**
   * The player's periodic check: due speaking events, stats, the live edge, and
   * (while `open`) starting a paused video that has something to play.
   */
  tick(open: boolean): void {
    this.#speech.check();
    if (this.#mode === "rtc") {
      void this.#rtc?.refreshStats().catch(() => {});
    } else this.#buffer.tick();
    this.#startIfPlayable(open);
  }

  /**
   * Starts a paused video that has something to play, while the socket is `open`.
   * Sound that may not start (autoplay refused) never holds the picture back: the video
   * plays muted, and `play()` after a user gesture turns the sound on.
   */
  #startIfPlayable(open: boolean): void {
    const v = this.#video;
    const playable = this.#mode === "rtc"
      ? v.srcObject !== null
      : this.#buffer.latencyS > 0;
    if (!v.paused || !open || !playable) return;
    // Autoplay refused: wait for `play()`, unless muted here (then it restarts muted,
    // e.g. on a takeover's new stream).
    if (this.#autoplayBlocked && !this.#mutedByUs) return;
    v.play().catch((err) => {
      if (!(err instanceof DOMException) || err.name !== "NotAllowedError") {
        return;
      }
      if (this.#mutedByUs) {
        this.#mutedByUs = false;
        v.muted = false;
        return;
      }
      if (this.#autoplayBlocked) return;
      this.#autoplayBlocked = true;
      this.#onAutoplayBlocked();
      if (v.muted) return;
      this.#mutedByUs = true;
      v.muted = true;
      this.#startIfPlayable(open);
    });
  }

  /**
   * Starts playback (with sound) after a user gesture when autoplay was blocked. When
   * the browser still refuses the sound, the video goes on muted (and this rejects).
   */
  async play(): Promise<void> {
    const v = this.#video;
    this.#autoplayBlocked = false;
    const mutedByUs = this.#mutedByUs;
    this.#mutedByUs = false;
    if (mutedByUs) v.muted = false;
    try {
      await v.play();
    } catch (err) {
      if (mutedByUs) {
        this.#mutedByUs = true;
        this.#autoplayBlocked = true;
        v.muted = true;
        void v.play().catch(() => {});
      }
      throw err;
    }
  }

  /** Releases the video (MediaSource or PeerConnection). */
  close(): void {
    this.#buffer.close();
    this.#rtc?.close();
  }
}
