/**
 * What plays in the browser client's `<video>` (client/browser.ts): the fMP4 stream over
 * MSE (client/mse.ts) for `websocket_fmp4` sessions, WebRTC from the SFU
 * (client/webrtc.ts) for `webrtc_sfu` ones; the `avatar.speaking` schedule on the
 * video's clock (client/speaking.ts); starting playback when autoplay allows it.
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

/** The video side of one player: one of the two transports, for the player's life. */
export class Playback {
  readonly #video: HTMLVideoElement;
  readonly #buffer: LiveBuffer;
  /** Set for a `webrtc_sfu` session: media comes over WebRTC, not the socket. */
  readonly #rtc: RtcPlayback | null;
  readonly #speech: SpeakingSchedule;
  readonly #onAutoplayBlocked: () => void;
  readonly #onPlaying: () => void;
  #autoplayBlocked = false;

  constructor(o: PlaybackOptions) {
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
    const rtc = o.transport === "webrtc_sfu"
      ? new RtcPlayback(o.video, {
        iceServers: o.iceServers ?? [],
        send: o.send,
        onError: o.onError,
        // A track arrived (an offer came over the open socket): start the video now
        // rather than at the next tick, up to 250 ms later.
        onPlaying: () => {
          o.onPlaying();
          this.#startIfPlayable(true);
        },
        onFailed: o.onFailed,
      })
      : null;
    this.#rtc = rtc;
    // WebRTC: `media_time_ms` is the sender's wall clock when the audio went out; it
    // plays once the receiver's jitter buffer lets it (docs/media-protocol.md).
    this.#speech = new SpeakingSchedule(
      o.video,
      o.onSpeaking,
      rtc ? () => Date.now() - rtc.playoutDelayMs : undefined,
    );
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
    if (!this.#rtc) this.#buffer.append(data);
  }

  /** `media.init`: a new fMP4 stream (a stream is flowing: the connection is healthy). */
  mediaInit(mime: string): void {
    this.#onPlaying();
    this.#buffer.reset(mime);
    this.#speech.reset();
  }

  /**
   * `webrtc.offer`: a new viewer. The speaking schedule goes on: its times are the
   * sender's wall clock, which no new viewer restarts.
   */
  offer(sdp: string): void {
    void this.#rtc?.offer(sdp);
  }

  /** `webrtc.candidate` from the SFU. */
  candidate(candidate: SocketCandidate | null): void {
    void this.#rtc?.candidate(candidate);
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
    if (this.#rtc) void this.#rtc.refreshStats().catch(() => {});
    else this.#buffer.tick();
    this.#startIfPlayable(open);
  }

  /** Starts a paused video that has something to play, while the socket is `open`. */
  #startIfPlayable(open: boolean): void {
    const v = this.#video;
    const playable = this.#rtc
      ? v.srcObject !== null
      : this.#buffer.latencyS > 0;
    if (v.paused && !this.#autoplayBlocked && open && playable) {
      v.play().catch((err) => {
        if (err instanceof DOMException && err.name === "NotAllowedError") {
          if (this.#autoplayBlocked) return;
          this.#autoplayBlocked = true;
          this.#onAutoplayBlocked();
        }
      });
    }
  }

  /** Starts playback after a user gesture when autoplay was blocked. */
  play(): Promise<void> {
    this.#autoplayBlocked = false;
    return this.#video.play();
  }

  /** Releases the video (MediaSource or PeerConnection). */
  close(): void {
    this.#buffer.close();
    this.#rtc?.close();
  }
}
