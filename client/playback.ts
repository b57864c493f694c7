/**
 * What plays the avatar in the browser client (client/browser.ts): for `websocket_fmp4`
 * sessions the socket's fMP4 stream, decoded with WebCodecs onto a canvas where the
 * browser can (client/webcodecs/), else over MSE in the `<video>` (client/mse.ts); for
 * `webrtc_sfu` ones WebRTC from the SFU (client/webrtc.ts). A transparent avatar's
 * stacked-alpha picture is composited on a canvas on every path (client/canvas.ts).
 * Speaking and caption events fire on the playback clock (client/clock.ts).
 *
 * Which transport plays follows the socket, not the session's transport: a
 * `webrtc.offer` plays over WebRTC, a `media.init` as fMP4 (a browser that cannot play
 * WebRTC is sent the fMP4 stream on a session created `auto`, DECISIONS 11).
 */
import { LiveBuffer, type LiveBufferStats } from "./mse.ts";
import { TimedEvents } from "./timed_events.ts";
import { AvatarSurface, pictureCanvas } from "./canvas.ts";
import {
  asBufferStats,
  NO_WEBCODECS,
  WebCodecsPlayback,
  type WebCodecsStats,
} from "./webcodecs/player.ts";
import { Autoplay } from "./autoplay.ts";
import { OpusAsk } from "./webcodecs/opus_ask.ts";
import {
  aacDecodable,
  audioDecoders,
  opusDecodable,
  opusKnown,
  webCodecsAvailable,
  webCodecsPreferred,
  webCodecsSupports,
} from "./webcodecs/support.ts";
import {
  type IceServer,
  NO_RTC,
  RtcPlayback,
  type RtcStats,
  type SocketCandidate,
} from "./webrtc.ts";
import type { CaptionDetail, SpeakingDetail } from "./player_types.ts";
import type { ServerMessage } from "./protocol.ts";

export interface PlaybackOptions {
  video: HTMLVideoElement;
  transport?: "webrtc_sfu" | "websocket_fmp4" | "auto";
  iceServers?: IceServer[];
  maxLatencyS: number;
  /**
   * `auto`: WebCodecs in Chromium, Firefox and WebKit on Linux where the decoders accept
   * the stream, `webcodecs`: wherever they exist and decoded audio can be read (Safari
   * too); `video`: always the `<video>`.
   */
  decoder?: "auto" | "webcodecs" | "video";
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
  /** A picture is shown: the video plays (MSE, WebRTC) or a frame is drawn (WebCodecs). */
  onShown: () => void;
  /** The WebRTC connection failed for good: renegotiate on a new socket. */
  onFailed: () => void;
  /** The avatar starts or stops speaking at the playback clock's time. */
  onSpeaking: (detail: SpeakingDetail) => void;
  /** A transcript is heard (./captions.ts). */
  onCaption: (detail: CaptionDetail) => void;
}

/** The media side of one player: WebRTC or fMP4 as the current socket streams. */
export class Playback {
  readonly #o: PlaybackOptions;
  readonly #video: HTMLVideoElement;
  readonly #buffer: LiveBuffer;
  /** Made at the first `webrtc.offer`: media comes over WebRTC, not the socket. */
  #rtc: RtcPlayback | null = null;
  /** What the socket streams now: WebRTC after an offer, fMP4 after a `media.init`. */
  #media: "rtc" | "fmp4";
  /** The fMP4 decoder, chosen on the first init segment. */
  #mode: "webcodecs" | "mse" | null = null;
  #wc: WebCodecsPlayback | null = null;
  /** Frames of the socket held while the first init segment is checked. */
  #held: ArrayBuffer[] | null = null;
  #mime = "";
  #checking = false;
  /** The stream is a transparent avatar's stacked-alpha picture. */
  #alpha = false;
  readonly #surface: AvatarSurface;
  readonly #events: TimedEvents;
  readonly #autoplay: Autoplay;
  readonly #opus = new OpusAsk((msg) => this.#o.send(msg));
  /** The current stream's init segment (its first binary frame), once it came. */
  #init: ArrayBuffer | null = null;

  constructor(o: PlaybackOptions) {
    this.#o = o;
    this.#video = o.video;
    this.#buffer = new LiveBuffer(o.video, {
      maxLatencyS: o.maxLatencyS,
      onError: o.onError,
      // Media arrived (only an open socket brings it): start the video now, not at
      // the next tick (throttled to about 1 s in a background tab).
      onAppended: () => this.#startIfPlayable(true),
      // A jump to the live edge skips silence, not speech (./live_edge.ts).
      speechAhead: (toMs) => this.#events.speechAhead(toMs),
    });
    this.#media = o.transport === "webrtc_sfu" ? "rtc" : "fmp4";
    this.#surface = new AvatarSurface(o.video, o.canvas);
    this.#autoplay = new Autoplay(o.video, o.onAutoplayBlocked);
    o.video.addEventListener("playing", () => {
      if (this.decoder !== "webcodecs") o.onShown();
    });
    // WebRTC: the sender's clock less the lag measured (./rtc_clock.ts). WebCodecs:
    // the audio worklet's heard time (-1 until audio plays). MSE: the video.
    this.#events = new TimedEvents({
      video: o.video,
      rtc: () => this.#media === "rtc",
      rtcSource: {
        playoutDelayMs: () => this.#rtc?.playoutDelayMs ?? 0,
        audioEnergy: () => this.#rtc?.audioEnergy() ?? Promise.resolve(null),
      },
      fmp4Clock: () =>
        this.#mode === "webcodecs" ? this.#wc?.mediaTimeMs ?? -1 : null,
      onSpeaking: o.onSpeaking,
      onCaption: o.onCaption,
    });
    // In WebKit on GStreamer this loads the WebAssembly Opus decoder while the picture
    // plays: once it runs the socket is asked for Opus; where it cannot, MSE plays.
    if (this.#webCodecsWanted()) {
      void opusDecodable().then((ok) => {
        if (this.#mode !== "webcodecs") return;
        if (ok) this.#opus.stream(this.#mime);
        else this.#toMse();
      });
    }
  }

  /** Whether the options and the browser ask for WebCodecs (the stream decides). */
  #webCodecsWanted(): boolean {
    return this.#o.decoder === "webcodecs"
      ? webCodecsAvailable()
      : this.#o.decoder !== "video" && webCodecsPreferred();
  }

  /** Whether the avatar is audibly speaking at the playback clock's time. */
  get speaking(): boolean {
    return this.#events.speaking;
  }

  /** Which decoder plays (null before the first stream). */
  get decoder(): "webcodecs" | "mse" | "webrtc" | null {
    return this.#media === "rtc" ? "webrtc" : this.#mode;
  }

  /**
   * Switches what the socket streams, releasing the other; what was scheduled on the
   * old clock is settled (speech reported silent, captions shown).
   */
  #switchTo(media: "rtc" | "fmp4"): void {
    if (this.#media === media && (media === "fmp4" || this.#rtc)) return;
    this.#media = media;
    if (media === "fmp4") this.#rtc?.close();
    else {
      this.#buffer.close();
      this.#wc?.close();
      this.#wc = null;
      this.#mode = null;
      this.#held = null;
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
    this.#events.reset();
  }

  get bufferStats(): LiveBufferStats {
    return this.#mode === "webcodecs" && this.#wc
      ? asBufferStats(this.#wc.stats)
      : this.#buffer.stats;
  }

  get webCodecsStats(): WebCodecsStats {
    return this.#wc?.stats ?? NO_WEBCODECS;
  }

  get rtcStats(): RtcStats {
    return this.#rtc?.stats ?? { ...NO_RTC };
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
        return this.#events.caption({
          turn_id: msg.turn_id,
          role: msg.role,
          text: msg.text,
          final: msg.final,
          media_time_ms: msg.media_time_ms,
          heard: msg.heard,
        });
      case "webrtc.offer":
        this.#switchTo("rtc");
        if (msg.alpha === "stacked") this.#surface.composite();
        return this.offer(msg.sdp);
      case "webrtc.candidate":
        return this.candidate(msg.candidate);
    }
  }

  /** A binary socket frame: fMP4 media (ignored on WebRTC). */
  segment(data: ArrayBuffer): void {
    if (this.#media !== "fmp4") return;
    this.#init ??= data;
    if (this.#held) {
      this.#held.push(data);
      if (!this.#checking) void this.#choose(new Uint8Array(data));
    } else if (this.#mode === "webcodecs") this.#wc!.append(data);
    else this.#buffer.append(data);
  }

  /** `media.init`: a new fMP4 stream (a stream is flowing: the connection is healthy). */
  mediaInit(mime: string, alpha = false): void {
    this.#switchTo("fmp4");
    this.#o.onPlaying();
    this.#alpha = alpha;
    this.#mime = mime;
    this.#init = null;
    this.#events.reset();
    if (this.#mode === "webcodecs") this.#webCodecsStream();
    else if (this.#mode === "mse" || !this.#webCodecsWanted()) {
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
    const audioDecoder = audioDecoders();
    this.#checking = false;
    const held = this.#held ?? [];
    this.#held = null;
    if (ok && audioDecoder) {
      this.#mode = "webcodecs";
      this.#wc = new WebCodecsPlayback({
        sink: (w, h) =>
          pictureCanvas(this.#surface.canvas(), this.#alpha, w, h),
        audioDecoder,
        onError: this.#o.onError,
        onFirstFrame: () => (this.#o.onShown(), this.#startIfPlayable(true)),
        workletUrl: this.#o.audioWorkletUrl,
      });
      this.#webCodecsStream();
    } else {
      this.#mode = "mse";
      this.#startMse();
    }
    for (const d of held) this.segment(d);
  }

  /**
   * A new stream on the WebCodecs path (its init segment comes next), the socket asked
   * for Opus if it is AAC. An AAC stream that will never be heard (WebKit on GStreamer:
   * the socket was asked already, or Opus does not decode either) goes to MSE instead,
   * with its sound, for the rest of the session; one while the Opus decoder loads
   * plays its picture.
   */
  #webCodecsStream(): void {
    const asked = this.#opus.stream(this.#mime);
    const opus = /\bopus\b/.test(this.#mime);
    const loading = opusKnown() === null;
    if (asked || opus || loading || aacDecodable()) {
      return this.#wc!.reset(asked);
    }
    this.#toMse();
  }

  /**
   * The rest of the session over MSE; mid-stream (the Opus decoder cannot run) from the
   * stream's init segment again, MSE playing from its next keyframe.
   */
  #toMse(): void {
    this.#wc?.close();
    this.#wc = null;
    this.#surface.close();
    this.#mode = "mse";
    this.#startMse();
    if (this.#init) this.#buffer.append(this.#init);
  }

  /** A new socket is open: its stream starts in AAC (./webcodecs/opus_ask.ts). */
  socketOpened(): void {
    this.#opus.socketOpened();
  }

  #startMse(): void {
    this.#buffer.reset(this.#mime);
    if (this.#alpha) this.#surface.composite();
  }

  /**
   * `webrtc.offer`: a new viewer. The speaking schedule goes on: its times are the
   * sender's wall clock, which no new viewer restarts.
   */
  offer(sdp: string): void {
    this.#events.newViewer();
    void this.#rtc?.offer(sdp);
  }

  /** `webrtc.candidate` from the SFU. */
  candidate(candidate: SocketCandidate | null): void {
    if (this.#media === "rtc") void this.#rtc?.candidate(candidate);
  }

  /** `avatar.speaking`: scheduled for when playback reaches it. */
  speech(detail: SpeakingDetail): void {
    this.#events.speech(detail);
  }

  /**
   * The player's periodic check: due speaking and caption events, stats, the live edge,
   * and (while `open`) starting a paused video that has something to play.
   */
  tick(open: boolean): void {
    this.#events.check();
    if (this.#media === "rtc") {
      void this.#rtc?.refreshStats().catch(() => {});
    } else if (this.#mode === "mse") this.#buffer.tick();
    this.#startIfPlayable(open);
  }

  /**
   * Starts paused playback that has something to play, while the socket is `open`
   * (within the autoplay policy: ./autoplay.ts).
   */
  #startIfPlayable(open: boolean): void {
    if (!open) return;
    if (this.#media === "fmp4" && this.#mode === "webcodecs" && this.#wc) {
      return this.#autoplay.startWebCodecs(this.#wc);
    }
    this.#autoplay.startVideo(
      this.#media === "rtc"
        ? this.#video.srcObject !== null
        : this.#buffer.latencyS > 0,
    );
  }

  /**
   * Starts playback (with sound) after a user gesture when autoplay was blocked. When
   * the browser still refuses the sound, the video goes on muted (and this rejects).
   */
  play(): Promise<void> {
    return this.#autoplay.play(
      this.#media === "fmp4" && this.#mode === "webcodecs" ? this.#wc : null,
    );
  }

  /** Releases the video (MediaSource, PeerConnection or decoders) and the canvas. */
  close(): void {
    this.#buffer.close();
    this.#rtc?.close();
    this.#wc?.close();
    this.#surface.close();
  }
}
