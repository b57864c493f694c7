/**
 * The video side of the browser client for `webrtc_sfu` sessions: an RTCPeerConnection
 * answering the SFU's offer that the server relays over the media socket
 * (`webrtc.offer` / `webrtc.answer` / `webrtc.candidate`, docs/media-protocol.md), its
 * remote stream attached to the same `<video>` the fMP4 path uses. Every offer (a new
 * socket: reconnect or takeover) gets a fresh PeerConnection.
 *
 * A browser without what that needs (no `RTCPeerConnection`, no H.264 among the
 * receiver's video codecs, or an answer that rejects the video) sends
 * `webrtc.unsupported` instead of an answer (DECISIONS 11): a session created `auto`
 * then streams fMP4 on the socket, one created `webrtc_sfu` answers with the fatal
 * `unsupported_media`.
 */
import { errorText } from "./errors.ts";
import type { RtcEnergy } from "./rtc_clock.ts";

export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

/** An ICE candidate as the socket carries it (RTCIceCandidateInit). */
export interface SocketCandidate {
  candidate: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}

export interface RtcStats {
  /** PeerConnections negotiated (one per offer). */
  peerConnections: number;
  framesDecoded: number;
  audioPacketsReceived: number;
  /**
   * The audio receiver's playout delay (ms): its jitter buffer's mean delay over the
   * audio emitted since the previous refresh (inbound-rtp `jitterBufferDelay /
   * jitterBufferEmittedCount`); 0 before any audio played.
   */
  playoutDelayMs: number;
}

/** The stats of no WebRTC playback. */
export const NO_RTC: Readonly<RtcStats> = {
  peerConnections: 0,
  framesDecoded: 0,
  audioPacketsReceived: 0,
  playoutDelayMs: 0,
};

export interface RtcPlaybackOptions {
  iceServers: IceServer[];
  /** Sends a signalling message on the current socket. */
  send: (msg: Record<string, unknown>) => void;
  /** Reports a negotiation or connection failure. */
  onError: (code: string, message: string) => void;
  /**
   * This browser cannot play the offer (`why`); `webrtc.unsupported` went out instead
   * of an answer.
   */
  onUnsupported?: (why: string) => void;
  /** Media arrived on the current PeerConnection. */
  onPlaying?: () => void;
  /** The current PeerConnection failed for good (ICE/DTLS): renegotiate on a new socket. */
  onFailed?: () => void;
}

/** WebRTC playback of one SFU viewer at a time into a `<video>`. */
export class RtcPlayback {
  #pc: RTCPeerConnection | null = null;
  #early: SocketCandidate[] = [];
  #count = 0;
  #last: RtcStats = {
    peerConnections: 0,
    framesDecoded: 0,
    audioPacketsReceived: 0,
    playoutDelayMs: 0,
  };
  /** The audio jitter buffer's totals at the previous refresh (this PeerConnection). */
  #jitter = { delayS: 0, emitted: 0 };

  constructor(
    readonly video: HTMLVideoElement,
    private readonly options: RtcPlaybackOptions,
  ) {}

  /**
   * Answers the SFU's offer on a fresh PeerConnection (the previous one closes), or
   * says `webrtc.unsupported` when this browser cannot play it. Never rejects.
   */
  async offer(sdp: string): Promise<void> {
    this.#closePc();
    const missing = webrtcMissing();
    if (missing) return this.#unsupported(missing);
    let pc: RTCPeerConnection;
    try {
      pc = new RTCPeerConnection({ iceServers: this.options.iceServers });
    } catch (err) {
      return this.#unsupported(`RTCPeerConnection failed: ${errorText(err)}`);
    }
    this.#jitter = { delayS: 0, emitted: 0 };
    this.#pc = pc;
    this.#count++;
    const stream = new MediaStream();
    pc.ontrack = (e) => {
      if (this.#pc !== pc) return;
      stream.addTrack(e.track);
      if (this.video.srcObject !== stream) this.video.srcObject = stream;
      this.options.onPlaying?.();
    };
    pc.onicecandidate = (e) => {
      if (this.#pc !== pc) return;
      this.options.send({
        type: "webrtc.candidate",
        candidate: e.candidate ? e.candidate.toJSON() : null,
      });
    };
    pc.onconnectionstatechange = () => {
      if (this.#pc === pc && pc.connectionState === "failed") {
        this.options.onError(
          "media_error",
          "The WebRTC connection to the SFU failed",
        );
        this.options.onFailed?.();
      }
    };
    try {
      await pc.setRemoteDescription({ type: "offer", sdp });
      // Candidates that came before this offer: ones of an older offer just fail.
      for (const c of this.#early.splice(0)) {
        await pc.addIceCandidate(c).catch(() => {});
      }
      const answer = await pc.createAnswer();
      if (this.#pc !== pc) return;
      if (rejectsVideo(answer.sdp ?? "")) {
        this.#closePc();
        return this.#unsupported("the answer rejects the offered video");
      }
      await pc.setLocalDescription(answer);
      if (this.#pc !== pc) return;
      this.options.send({ type: "webrtc.answer", sdp: answer.sdp ?? "" });
    } catch (err) {
      if (this.#pc !== pc) return;
      this.options.onError("media_error", errorText(err));
    }
  }

  #unsupported(why: string): void {
    this.options.send({ type: "webrtc.unsupported" });
    this.options.onUnsupported?.(why);
  }

  /** One SFU candidate (null: the end of them). */
  async candidate(c: SocketCandidate | null): Promise<void> {
    const pc = this.#pc;
    if (!pc || !pc.remoteDescription) {
      if (c && this.#early.length < 32) this.#early.push(c);
      return;
    }
    await pc.addIceCandidate(c ?? undefined).catch(() => {});
  }

  /**
   * Decoded frames and received audio packets so far (this PeerConnection), and the
   * audio playout delay now.
   */
  async refreshStats(): Promise<RtcStats> {
    const pc = this.#pc;
    if (!pc) return this.#last;
    const out: RtcStats = {
      peerConnections: this.#count,
      framesDecoded: 0,
      audioPacketsReceived: 0,
      playoutDelayMs: this.#last.playoutDelayMs,
    };
    const jitter = { delayS: 0, emitted: 0 };
    (await pc.getStats()).forEach((r) => {
      if (r.type !== "inbound-rtp") return;
      if (r.kind === "video") out.framesDecoded += r.framesDecoded ?? 0;
      if (r.kind === "audio") {
        out.audioPacketsReceived += r.packetsReceived ?? 0;
        jitter.delayS += r.jitterBufferDelay ?? 0;
        jitter.emitted += r.jitterBufferEmittedCount ?? 0;
      }
    });
    if (this.#pc !== pc) return this.#last;
    const emitted = jitter.emitted - this.#jitter.emitted;
    if (emitted > 0) {
      out.playoutDelayMs = Math.round(
        (jitter.delayS - this.#jitter.delayS) / emitted * 1000,
      );
    }
    this.#jitter = jitter;
    this.#last = out;
    return out;
  }

  /**
   * The received audio's total energy (inbound-rtp `totalAudioEnergy`) and when it was
   * read (epoch ms); null without a PeerConnection or where the browser reports none.
   */
  async audioEnergy(): Promise<RtcEnergy | null> {
    const pc = this.#pc;
    if (!pc) return null;
    let energy: number | null = null;
    (await pc.getStats()).forEach((r) => {
      const e = r.type === "inbound-rtp" && r.kind === "audio"
        ? r.totalAudioEnergy
        : undefined;
      if (typeof e === "number") energy = (energy ?? 0) + e;
    });
    return energy === null || this.#pc !== pc
      ? null
      : { energy, at: Date.now() };
  }

  /** The audio playout delay (ms) as of the last refresh. */
  get playoutDelayMs(): number {
    return this.#last.playoutDelayMs;
  }

  get stats(): RtcStats {
    return this.#last;
  }

  close(): void {
    this.#closePc();
    this.#early = [];
    this.video.srcObject = null;
  }

  #closePc(): void {
    this.#pc?.close();
    this.#pc = null;
  }
}

/**
 * What this browser lacks to play the SFU's stream (DECISIONS 11): `RTCPeerConnection`,
 * or H.264 among `RTCRtpReceiver.getCapabilities("video")` (Firefox without its
 * OpenH264 plugin); null when nothing is known to be missing.
 */
export function webrtcMissing(): string | null {
  const g = globalThis as {
    RTCPeerConnection?: unknown;
    RTCRtpReceiver?: { getCapabilities?: (kind: string) => unknown };
  };
  if (typeof g.RTCPeerConnection !== "function") {
    return "this browser has no RTCPeerConnection";
  }
  type Caps = { codecs?: Array<{ mimeType?: string }> } | null | undefined;
  let caps: Caps = null;
  try {
    caps = g.RTCRtpReceiver?.getCapabilities?.("video") as Caps;
  } catch {
    // Treated as unknown, below.
  }
  // Without getCapabilities the answer tells (a rejected video line).
  if (!caps || !Array.isArray(caps.codecs)) return null;
  const h264 = caps.codecs.some((c) =>
    String(c.mimeType).toLowerCase() === "video/h264"
  );
  return h264 ? null : "this browser's WebRTC has no H.264";
}

/** Whether an SDP answer rejects its video section (`m=video 0`) or has none. */
function rejectsVideo(sdp: string): boolean {
  const video = sdp.match(/^m=video (\d+)/m);
  return video === null || video[1] === "0";
}
