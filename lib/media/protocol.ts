/**
 * Media socket protocol v1 (DECISIONS 6): the messages a browser may send, validated, and
 * the shapes of what the server sends.
 */
import { z } from "zod";

export const MIN_SAMPLE_RATE = 8000;
export const MAX_SAMPLE_RATE = 48000;
export const DEFAULT_BROWSER_SAMPLE_RATE = 24000;
/** Longest typed turn accepted, in characters. */
export const MAX_TEXT_LENGTH = 4000;

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
  z.object({ type: z.literal("ping") }),
]);

export type ClientMessage = z.infer<typeof clientMessageSchema>;

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
  | "invalid_message";

export type ServerMessage =
  | { type: "session.state"; status: string }
  | { type: "media.init"; mime: string }
  | { type: "turn.start"; turn_id: string; role: "user" | "avatar" }
  | { type: "turn.end"; turn_id: string }
  | {
    type: "transcript";
    turn_id: string;
    role: "user" | "avatar";
    text: string;
    final: boolean;
  }
  | { type: "error"; code: SocketErrorCode; fatal: boolean }
  | { type: "session.ended"; status: string }
  | { type: "pong" };

/** Close code for a socket replaced by a newer one for the same session. */
export const CLOSE_TAKEN_OVER = 4000;

/** Decodes a binary frame of PCM16LE mono into samples (a trailing odd byte is dropped). */
export function pcmFromBytes(data: ArrayBuffer | Uint8Array): Int16Array {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const n = bytes.byteLength >> 1;
  const out = new Int16Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}
