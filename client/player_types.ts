/**
 * Options, states and events of the browser client's `AvatarPlayer` (client/browser.ts).
 */
import type { LiveBufferStats } from "./mse.ts";
import type { IceServer, RtcStats } from "./webrtc.ts";
import type { WebCodecsStats } from "./webcodecs/player.ts";

/** A fresh media token, as `POST /v1/sessions/{id}/client-token` answers it. */
export interface FreshToken {
  client_token: string;
  expires_at: number;
}

export interface AvatarPlayerOptions {
  sessionId: string;
  /** `client_token` (or `stream_metadata.session_token`) from session creation. */
  token: string;
  /** The token's `expires_at` (epoch ms); an expired token is refreshed before use. */
  expiresAt?: number;
  /** e.g. `wss://avatar.example.com`. */
  wsBaseUrl: string;
  video: HTMLVideoElement;
  /**
   * How a `websocket_fmp4` stream is decoded: `auto` (default) with WebCodecs in
   * Chromium- and Firefox-based browsers and WebKit on Linux that accept the stream
   * (drawn on a canvas at lower latency), else MSE in the `<video>`; `webcodecs`
   * wherever `VideoDecoder` and `AudioDecoder` exist (Safari untested); `video` always
   * MSE. WebKit on Linux decodes the sound with a WebAssembly Opus decoder (its
   * `AudioData` crashes the page when read), loaded only there: a page whose CSP
   * forbids WebAssembly (`'wasm-unsafe-eval'`) plays MSE.
   */
  decoder?: "auto" | "webcodecs" | "video";
  /**
   * Where the avatar is drawn when it is not the `<video>` (WebCodecs, or a transparent
   * background on any path). Default: a canvas the player puts in the video's place
   * (with the video's classes and `avatar-canvas`), hiding the video.
   */
  canvas?: HTMLCanvasElement;
  /**
   * The session's `transport` from create: `webrtc_sfu` expects WebRTC (signalling on
   * the media socket), anything else fMP4 (default `websocket_fmp4`). Playback follows
   * the socket: a `webrtc.offer` plays over WebRTC, a `media.init` as fMP4 (`decoder`) (a browser
   * that cannot play WebRTC gets fMP4 on a session created `auto`).
   */
  transport?: "webrtc_sfu" | "websocket_fmp4" | "auto";
  /** `stream_metadata.ice_servers` from create (WebRTC only). */
  iceServers?: IceServer[];
  /** Asks the customer backend for a fresh token (it calls the client-token route). */
  refreshToken: () => Promise<FreshToken>;
  /** Capture and send the microphone (default true). */
  microphone?: boolean;
  /** Rate the microphone is sent at, 8000..48000 (default 24000). */
  micSampleRate?: number;
  /** Length of one microphone frame in ms (default 20). */
  frameMs?: number;
  /** URL of the worklet module; default a Blob URL of the built-in source. */
  workletUrl?: string;
  /**
   * URL of the WebCodecs audio output worklet (`AUDIO_OUT_SOURCE` served as a file);
   * default a Blob URL of it.
   */
  audioWorkletUrl?: string;
  /** Reconnect after an unexpected close (default true). */
  reconnect?: boolean;
  /** Reconnect attempts in a row before giving up (default 8). */
  maxReconnectAttempts?: number;
  /** Jump to the live edge when this far behind, seconds (default 1). */
  maxLatencyS?: number;
  now?: () => number;
}

export type PlayerState =
  | "idle"
  | "connecting"
  | "open"
  | "reconnecting"
  | "ended"
  | "closed";

export interface StateDetail {
  state: PlayerState;
  /** The session's status as the socket last reported it. */
  status: string | null;
}
export interface TranscriptDetail {
  turn_id: string;
  role: "user" | "avatar";
  text: string;
  final: boolean;
}
export interface TurnDetail {
  phase: "start" | "end";
  turn_id: string;
  role: "user" | "avatar" | null;
}
/** Socket error codes (SPEC 6.2) plus the client's own: `connect_failed`,
 * `reconnect_failed`, `microphone_unavailable`, `autoplay_blocked`,
 * `unsupported_media`, `media_error`. */
export interface ErrorDetail {
  code: string;
  fatal: boolean;
  message?: string;
}
export interface EndedDetail {
  /** `ended` / `ended_with_warnings`, or null when the socket refused a dead session. */
  status: string | null;
  /**
   * Why it ended (`requested`, `forced`, `idle_timeout`, `max_duration`,
   * `provider_ended`, `provider_failed`, `render_failed`, `instance_lost`, …), or null
   * when the server did not say.
   */
  reason: string | null;
}
/**
 * The avatar starts or stops speaking audibly, fired when the video reaches
 * `media_time_ms` (the stream's presentation time of that moment).
 */
export interface SpeakingDetail {
  speaking: boolean;
  turn_id: string;
  media_time_ms: number;
}
/**
 * A caption: a transcript when it is heard. Avatar text fires when playback reaches
 * `media_time_ms` (its audio begins), user text at once; `heard: false` is avatar text
 * whose audio was cut by an interrupt (reported at once, never spoken).
 */
export interface CaptionDetail {
  turn_id: string;
  role: "user" | "avatar";
  text: string;
  final: boolean;
  media_time_ms: number | null;
  heard: boolean;
}
/** An avatar turn was cut (interrupt or barge-in) after `played_ms` of its audio. */
export interface InterruptedDetail {
  turn_id: string;
  played_ms: number;
}

export interface AvatarPlayerEventMap {
  state: StateDetail;
  transcript: TranscriptDetail;
  turn: TurnDetail;
  error: ErrorDetail;
  ended: EndedDetail;
  speaking: SpeakingDetail;
  caption: CaptionDetail;
  interrupted: InterruptedDetail;
}

export interface PlayerStats extends LiveBufferStats {
  micFramesSent: number;
  reconnects: number;
  /** WebRTC playback (`webrtc_sfu` sessions); zeros otherwise. */
  rtc: RtcStats;
  /** Which decoder plays: WebCodecs on a canvas, MSE or WebRTC in the `<video>`. */
  decoder: "webcodecs" | "mse" | "webrtc" | null;
  /** WebCodecs playback; zeros otherwise. */
  webcodecs: WebCodecsStats;
}
