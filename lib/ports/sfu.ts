/**
 * The SFU port (DECISIONS 11): what the service needs from a realtime SFU, whatever the
 * server behind it. `janus.ts` implements it over Janus's HTTP API and streaming plugin.
 */

/** Why an SFU call failed; create maps these to `AVTR_SFU_*` codes. */
export type SfuErrorKind =
  /** Unreachable, timed out, answered garbage, or refused our credentials. */
  | "connection"
  /** Reached, but refused a request (a mountpoint, a watch, an answer). */
  | "negotiation"
  /** Reached, but out of capacity (ports, sessions). */
  | "full";

export class SfuError extends Error {
  readonly kind: SfuErrorKind;
  constructor(kind: SfuErrorKind, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SfuError";
    this.kind = kind;
  }
}

/** One session's ingest point on the SFU: where the renderer sends RTP. */
export interface Mountpoint {
  id: number;
  /** The address the ingest ports listen on (loopback or the SFU's private network). */
  host: string;
  /** H.264 (pt 96, packetization-mode 1) RTP. */
  videoPort: number;
  /** Opus (pt 111) RTP. */
  audioPort: number;
  /**
   * The ingest's SRTP master key and salt (base64, 30 bytes, suite
   * `AES_CM_128_HMAC_SHA1_80`): the mountpoint takes only packets under it.
   */
  srtp: string;
}

/** A mountpoint the SFU holds, as listed (ours carry `label` = the session id). */
export interface ListedMountpoint {
  id: number;
  label: string;
}

/** An ICE candidate as browsers send it (RTCIceCandidateInit); null ends the list. */
export interface IceCandidate {
  candidate: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}

/** What a viewer reports as it goes. */
export interface ViewerEvents {
  /** An SFU-side ICE candidate for the browser. */
  onCandidate?: (candidate: IceCandidate) => void;
  /** DTLS is up and the SFU sends the viewer media. */
  onMediaFlowing?: () => void;
  /** The SFU dropped the viewer (hangup, mountpoint destroyed, SFU session lost). */
  onClosed?: (reason: string) => void;
}

/** One browser's subscription to a mountpoint, negotiated through the service. */
export interface Viewer {
  /** The SFU's SDP offer for the browser. */
  readonly offer: string;
  /** Hands the browser's SDP answer to the SFU; media starts once ICE/DTLS are up. */
  answer(sdp: string, signal?: AbortSignal): Promise<void>;
  /** Hands one browser ICE candidate (or the end of them) to the SFU. */
  trickle(candidate: IceCandidate | null): Promise<void>;
  /** Ends the subscription on the SFU (its PeerConnection closes). Idempotent. */
  close(): Promise<void>;
}

export interface SfuPort {
  /** Resolves when the SFU answers with our credentials; throws `SfuError` else. */
  health(signal?: AbortSignal): Promise<void>;
  /** A private mountpoint (random id, secret and pin) labelled `label`. */
  createMountpoint(label: string, signal?: AbortSignal): Promise<Mountpoint>;
  /** Destroys a mountpoint (its viewers are dropped); absent already counts as done. */
  destroyMountpoint(id: number, signal?: AbortSignal): Promise<void>;
  /** Every mountpoint the SFU holds, private ones included. */
  listMountpoints(signal?: AbortSignal): Promise<ListedMountpoint[]>;
  /** Subscribes a new viewer; resolves once the SFU's offer is ready. */
  watch(
    mountpointId: number,
    events: ViewerEvents,
    signal?: AbortSignal,
  ): Promise<Viewer>;
}
