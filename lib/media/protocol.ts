/**
 * Media socket protocol v1 (DECISIONS 6): the messages a browser may send, validated, and
 * the shapes of what the server sends.
 */
import { z } from "zod";
import type { EndReason } from "../api/schemas.ts";

export const MIN_SAMPLE_RATE = 8000;
export const MAX_SAMPLE_RATE = 48000;
export const DEFAULT_BROWSER_SAMPLE_RATE = 24000;
/** Longest typed turn accepted, in characters. */
export const MAX_TEXT_LENGTH = 4000;

/** Longest SDP answer and ICE candidate line accepted, in characters. */
export const MAX_SDP_LENGTH = 32 * 1024;
export const MAX_CANDIDATE_LENGTH = 1024;

/** How a browser client plays the media (`client.stats`' `decoder`). */
export const VIEWER_DECODERS = ["webcodecs", "mse", "mms", "webrtc"] as const;
/** A `client.stats` duration: milliseconds, at most ten minutes. */
const viewerMs = z.number().finite().min(0).max(600_000);
/** A `client.stats` count since the socket opened. */
const viewerCount = z.number().int().min(0).max(1_000_000_000);

export const clientMessageSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("audio.config"),
    sample_rate: z.number().int().min(MIN_SAMPLE_RATE).max(MAX_SAMPLE_RATE),
  }),
  z.object({
    type: z.literal("text"),
    text: z.string().min(1).max(MAX_TEXT_LENGTH),
  }),
  z.object({ type: z.literal("interrupt") }),
  // The audio codec the player decodes: Opus for a WebCodecs player (DECISIONS 6).
  z.object({
    type: z.literal("media.config"),
    audio: z.enum(["aac", "opus"]),
  }),
  z.object({ type: z.literal("ping") }),
  // WebRTC signalling of a webrtc_sfu session (DECISIONS 11), proxied to the SFU.
  z.object({
    type: z.literal("webrtc.answer"),
    sdp: z.string().min(1).max(MAX_SDP_LENGTH),
  }),
  // The browser cannot play WebRTC (no RTCPeerConnection, no H.264): DECISIONS 11.
  z.object({ type: z.literal("webrtc.unsupported") }),
  // What the viewer experiences (DECISIONS 6): every field optional and bounded.
  z.object({
    type: z.literal("client.stats"),
    decoder: z.enum(VIEWER_DECODERS).optional(),
    first_frame_ms: viewerMs.optional(),
    stalls: viewerCount.optional(),
    underruns: viewerCount.optional(),
    jitter_buffer_ms: viewerMs.optional(),
    audio_output_latency_ms: viewerMs.optional(),
    glass_to_glass_ms_est: viewerMs.optional(),
    frames_shown: viewerCount.optional(),
    frames_dropped: viewerCount.optional(),
  }),
  z.object({
    type: z.literal("webrtc.candidate"),
    candidate: z.object({
      candidate: z.string().max(MAX_CANDIDATE_LENGTH),
      sdpMid: z.string().max(64).nullish(),
      sdpMLineIndex: z.number().int().min(0).max(64).nullish(),
    }).nullable(),
  }),
]);

export type ClientMessage = z.infer<typeof clientMessageSchema>;

/** Largest browser frame (binary or text) the server processes, in bytes (DECISIONS 6). */
export const MAX_FRAME_BYTES = 64 * 1024;

/**
 * Whether a browser frame is over `MAX_FRAME_BYTES` (text counted in UTF-8). Checked
 * first, before any rate gate, parsing or decoding; anything neither text nor binary
 * counts as over (nothing else can be used either).
 */
export function isOversize(data: unknown): boolean {
  if (typeof data === "string") {
    // The UTF-16 length bounds the UTF-8 size from below and a third of it from above:
    // the exact size is only counted for frames that could be over.
    if (data.length > MAX_FRAME_BYTES) return true;
    return data.length * 3 > MAX_FRAME_BYTES &&
      utf8Length(data) > MAX_FRAME_BYTES;
  }
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
    return data.byteLength > MAX_FRAME_BYTES;
  }
  return true;
}

/** A binary frame's bytes when it is usable PCM16LE (non-empty, even length), else null. */
export function pcmBytes(data: ArrayBuffer | Uint8Array): Uint8Array | null {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  return bytes.byteLength === 0 || bytes.byteLength % 2 !== 0 ? null : bytes;
}

/** Size of `s` in UTF-8, without encoding it (a lone surrogate counts as U+FFFD, 3 bytes). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (
      c >= 0xd800 && c <= 0xdbff && i + 1 < s.length &&
      (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    ) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Parses one text frame; null when it is not a message the server can use. */
export function parseClientMessage(text: string): ClientMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = clientMessageSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

export type SocketErrorCode =
  | "invalid_session"
  | "session_already_active"
  | "avatar_not_found"
  | "stt_failed"
  | "llm_failed"
  | "tts_failed"
  | "avatar_render_failed"
  | "invalid_message"
  | "unsupported_media";

export type ServerMessage =
  | { type: "session.state"; status: string }
  | { type: "media.init"; mime: string; alpha?: "stacked" }
  | { type: "turn.start"; turn_id: string; role: "user" | "avatar" }
  | { type: "turn.end"; turn_id: string }
  | {
    type: "transcript";
    turn_id: string;
    role: "user" | "avatar";
    text: string;
    final: boolean;
    /** Avatar text: where its audio begins on the stream's timeline. */
    media_time_ms?: number;
    /** Avatar text whose audio was cut before it was heard. */
    heard?: false;
  }
  | { type: "error"; code: SocketErrorCode; fatal: boolean }
  | { type: "session.ended"; status: string; reason?: EndReason }
  | {
    type: "avatar.speaking";
    speaking: boolean;
    turn_id: string;
    media_time_ms: number;
  }
  | { type: "turn.interrupted"; turn_id: string; played_ms: number }
  | { type: "pong" }
  | { type: "webrtc.offer"; sdp: string; alpha?: "stacked" }
  | {
    type: "webrtc.candidate";
    candidate: {
      candidate: string;
      sdpMid?: string | null;
      sdpMLineIndex?: number | null;
    } | null;
  };

/** Close code for a socket replaced by a newer one for the same session. */
export const CLOSE_TAKEN_OVER = 4000;
/**
 * Close code for a socket of a session created `webrtc_sfu` whose browser cannot play
 * WebRTC (after the fatal `unsupported_media`; DECISIONS 11).
 */
export const CLOSE_UNSUPPORTED_MEDIA = 4003;
/** Close code for a socket that kept sending frames over `MAX_FRAME_BYTES` (RFC 6455 1009). */
export const CLOSE_TOO_BIG = 1009;
/**
 * Close code for a socket that sent more bytes than its bound (`INBOUND_BYTES_PER_S`,
 * ./gate.ts): RFC 6455 1008, policy violation.
 */
export const CLOSE_FLOODING = 1008;
/** Oversize frames one socket may send; the next one closes it with 1009. */
export const MAX_OVERSIZE_FRAMES = 2;

/** Decodes a binary frame of PCM16LE mono into samples (a trailing odd byte is dropped). */
export function pcmFromBytes(data: ArrayBuffer | Uint8Array): Int16Array {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const n = bytes.byteLength >> 1;
  const out = new Int16Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** `session.ended` with its status, and why when known. */
export function endedMessage(
  status: string,
  reason?: EndReason | null,
): ServerMessage {
  return reason
    ? { type: "session.ended", status, reason }
    : { type: "session.ended", status };
}
