/**
 * What plays the avatar in the browser client (client/browser.ts): for `websocket_fmp4`
 * sessions the socket's fMP4 stream, decoded with WebCodecs onto a canvas where the
 * browser can (client/webcodecs/), else over MSE in the `<video>` (client/mse.ts); for
 * `webrtc_sfu` ones WebRTC from the SFU (client/webrtc.ts). A transparent avatar's
 * stacked-alpha picture is composited on a canvas on every path (client/canvas.ts).
 * Speaking and caption events fire on the playback clock (client/clock.ts).
 */
import { LiveBuffer } from "./mse.ts";
import { SpeakingSchedule } from "./speaking.ts";
import { CaptionSchedule } from "./captions.ts";
import { MediaClock } from "./clock.ts";
import { pictureCanvas, VideoCompositor } from "./canvas.ts";
import {
  webCodecsAvailable,
  WebCodecsPlayback,
  type WebCodecsStats,
  webCodecsSupports,
} from "./webcodecs/player.ts";
import { type IceServer, RtcPlayback, type SocketCandidate } from "./webrtc.ts";
import type { LiveBufferStats } from "./mse.ts";
import type { RtcStats } from "./webrtc.ts";
import type { CaptionDetail, SpeakingDetail } from "./player_types.ts";
import type { ServerMessage } from "./protocol.ts";

export interface PlaybackOptions {
  video: HTMLVideoElement;
  transport?: "webrtc_sfu" | "websocket_fmp4" | "auto";
  iceServers?: IceServer[];
  maxLatencyS: number;
  /** `auto`: WebCodecs where the browser can; `video`: always the `<video>`. */
  decoder?: "auto" | "video";
  /** Where a canvas-drawn avatar goes; default one put in the video's place. */
  canvas?: HTMLCanvasElement;
  /** The audio output worklet's module URL (WebCodecs); default a Blob URL. */
  audioWorkletUrl?: string;
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
  /** The avatar starts or stops speaking at the playback clock's time. */
  onSpeaking: (detail: SpeakingDetail) => void;
  /** A transcript is heard (./captions.ts). */
  onCaption: (detail: CaptionDetail) => void;
}

const NO_WEBCODECS: WebCodecsStats = {
  streams: 0,
  segments: 0,
  framesDecoded: 0,
  framesDrawn: 0,
  framesSkipped: 0,
  clockMs: null,
  shownMs: null,
  latencyMs: 0,
  underruns: 0,
  liveEdgeJumps: 0,
  jitterTargetMs: 0,
  queuedMs: 0,
  outputLatencyMs: 0,
};

/** The media side of one player: one transport and one decoder, for the player's life. */
export class Playback {
  readonly #o: PlaybackOptions;
  readonly #video: HTMLVideoElement;
  readonly #buffer: LiveBuffer;
  /** Set for a `webrtc_sfu` session: media comes over WebRTC, not the socket. */
  readonly #rtc: RtcPlayback | null;
  /** The fMP4 decoder, chosen on the first init segment. */
  #mode: "webcodecs" | "mse" | null = null;
  #wc: WebCodecsPlayback | null = null;
  /** Frames of the socket held while the first init segment is checked. */
  #held: ArrayBuffer[] | null = null;
  #mime = "";
  #checking = false;
  /** The stream is a transparent avatar's stacked-alpha picture. */
  #alpha = false;
  #canvas: HTMLCanvasElement | null = null;
  #ownCanvas = false;
  #compositor: VideoCompositor | null = null;
  readonly #speech: SpeakingSchedule;
  readonly #captions: CaptionSchedule;
  #autoplayBlocked = false;
  #resumeTried = false;

  constructor(o: PlaybackOptions) {
    this.#o = o;
    this.#video = o.video;
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
    // WebCodecs: the audio worklet's heard time (-1 until audio plays).
    const clock = new MediaClock(o.video, () => {
      if (rtc) return Date.now() - rtc.playoutDelayMs;
      if (this.#mode === "webcodecs") return this.#wc?.mediaTimeMs ?? -1;
      return null;
    });
    this.#speech = new SpeakingSchedule(clock, o.onSpeaking);
    this.#captions = new CaptionSchedule(clock, o.onCaption);
  }

  /** Whether the avatar is audibly speaking at the playback clock's time. */
  get speaking(): boolean {
    return this.#speech.speaking;
  }

  /** Which decoder plays (null before the first stream). */
  get decoder(): "webcodecs" | "mse" | "webrtc" | null {
    return this.#rtc ? "webrtc" : this.#mode;
  }

  get bufferStats(): LiveBufferStats {
    if (this.#mode !== "webcodecs" || !this.#wc) return this.#buffer.stats;
    const w = this.#wc.stats;
    return {
      streams: w.streams,
      segmentsAppended: w.segments,
      segmentsDropped: 0,
      liveEdgeJumps: w.liveEdgeJumps,
      gapSkips: 0,
    };
  }

  get webCodecsStats(): WebCodecsStats {
    return this.#wc?.stats ?? NO_WEBCODECS;
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
   * A media message of the socket (`media.init`, `avatar.speaking`, `transcript`,
   * `webrtc.offer`, `webrtc.candidate`); others are ignored.
   */
  handle(msg: ServerMessage): void {
    switch (msg.type) {
      case "media.init":
        return this.mediaInit(msg.mime, msg.alpha === "stacked");
      case "avatar.speaking":
        return this.speech({
          speaking: msg.speaking,
          turn_id: msg.turn_id,
          media_time_ms: msg.media_time_ms,
        });
      case "transcript":
        return this.#captions.add({
          turn_id: msg.turn_id,
          role: msg.role,
          text: msg.text,
          final: msg.final,
          media_time_ms: msg.media_time_ms,
          heard: msg.heard,
        });
      case "webrtc.offer":
        if (msg.alpha === "stacked") this.#composite();
        return this.offer(msg.sdp);
      case "webrtc.candidate":
        return this.candidate(msg.candidate);
    }
  }

  /** A binary socket frame: fMP4 media (ignored on WebRTC). */
  segment(data: ArrayBuffer): void {
    if (this.#rtc) return;
    if (this.#held) {
      this.#held.push(data);
      if (!this.#checking) void this.#choose(new Uint8Array(data));
    } else if (this.#mode === "webcodecs") this.#wc!.append(data);
    else this.#buffer.append(data);
  }

  /** `media.init`: a new fMP4 stream (a stream is flowing: the connection is healthy). */
  mediaInit(mime: string, alpha = false): void {
    this.#o.onPlaying();
    this.#alpha = alpha;
    this.#mime = mime;
    this.#speech.reset();
    this.#captions.reset();
    if (this.#mode === "webcodecs") this.#wc!.reset();
    else if (this.#mode === "mse") this.#startMse();
    else if (this.#o.decoder === "video" || !webCodecsAvailable()) {
      this.#mode = "mse";
      this.#startMse();
    } else {
      // The first stream: its init segment (the next frame) says whether the
      // decoders take it.
      this.#held = [];
    }
  }

  /** Picks WebCodecs or MSE for the session on its first init segment. */
  async #choose(init: Uint8Array): Promise<void> {
    this.#checking = true;
    const ok = await webCodecsSupports(init);
    this.#checking = false;
    const held = this.#held ?? [];
    this.#held = null;
    if (ok) {
      this.#mode = "webcodecs";
      this.#wc = new WebCodecsPlayback({
        sink: (w, h) => pictureCanvas(this.#ensureCanvas(), this.#alpha, w, h),
        onError: this.#o.onError,
        onFirstFrame: () => this.#startIfPlayable(true),
        workletUrl: this.#o.audioWorkletUrl,
      });
      this.#wc.reset();
      for (const d of held) this.#wc.append(d);
    } else {
      this.#mode = "mse";
      this.#startMse();
      for (const d of held) this.#buffer.append(d);
    }
  }

  #startMse(): void {
    this.#buffer.reset(this.#mime);
    if (this.#alpha) this.#composite();
  }

  /** A `<video>` path of a transparent avatar: its frames drawn onto the canvas. */
  #composite(): void {
    if (this.#compositor) return;
    this.#compositor = new VideoCompositor(this.#video, this.#ensureCanvas());
  }

  /** The page's canvas, or one put in the video's place (the video hidden). */
  #ensureCanvas(): HTMLCanvasElement {
    if (this.#canvas) return this.#canvas;
    let canvas = this.#o.canvas;
    if (!canvas) {
      canvas = document.createElement("canvas");
      canvas.className = `${this.#video.className} avatar-canvas`.trim();
      this.#video.after(canvas);
      this.#ownCanvas = true;
    }
    canvas.hidden = false;
    this.#video.hidden = true;
    this.#canvas = canvas;
    return canvas;
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
   * The player's periodic check: due speaking and caption events, stats, the live edge,
   * and (while `open`) starting a paused video that has something to play.
   */
  tick(open: boolean): void {
    this.#speech.check();
    this.#captions.check();
    if (this.#rtc) void this.#rtc.refreshStats().catch(() => {});
    else if (this.#mode === "mse") this.#buffer.tick();
    this.#startIfPlayable(open);
  }

  /** Starts paused playback that has something to play, while the socket is `open`. */
  #startIfPlayable(open: boolean): void {
    if (this.#autoplayBlocked || !open) return;
    const wc = this.#mode === "webcodecs" ? this.#wc : null;
    if (wc) {
      if (!wc.hasMedia || !wc.suspended) return;
      // An audio context that stays suspended after a resume waits for a gesture.
      if (this.#resumeTried) this.#blocked();
      else void wc.play();
      this.#resumeTried = true;
      return;
    }
    const v = this.#video;
    const playable = this.#rtc
      ? v.srcObject !== null
      : this.#buffer.latencyS > 0;
    if (v.paused && playable) {
      v.play().catch((err) => {
        if (err instanceof DOMException && err.name === "NotAllowedError") {
          this.#blocked();
        }
      });
    }
  }

  #blocked(): void {
    if (this.#autoplayBlocked) return;
    this.#autoplayBlocked = true;
    this.#o.onAutoplayBlocked();
  }

  /** Starts playback after a user gesture when autoplay was blocked. */
  play(): Promise<void> {
    this.#autoplayBlocked = false;
    this.#resumeTried = false;
    if (this.#mode === "webcodecs" && this.#wc) return this.#wc.play();
    return this.#video.play();
  }

  /** Releases the video (MediaSource, PeerConnection or decoders) and the canvas. */
  close(): void {
    this.#buffer.close();
    this.#rtc?.close();
    this.#wc?.close();
    this.#compositor?.stop();
    if (this.#canvas) {
      if (this.#ownCanvas) this.#canvas.remove();
      this.#video.hidden = false;
    }
  }
}
