/**
 * What an engine may send, and what happens to what it may not (DECISIONS 7,
 * docs/engine-protocol.md "What the service checks"): frame size caps applied before any
 * decoding, a zod schema per message type (looked up by `type`, never through the
 * prototype), bounded strings, and the per-session count of invalid frames whose flood
 * ends the session.
 */
import { z } from "zod";
import { bytesToPcm } from "./resample.ts";

/**
 * Largest engine frame decoded: text frames over this many characters and binary frames
 * over this many bytes are refused before `JSON.parse` or PCM decoding (Deno's client has
 * no max-payload option, so the frame was received; it is never decoded). 256 KiB is over
 * a second of 96 kHz PCM16 and over 2.5 s of 24 kHz base64 audio in one message.
 */
export const MAX_ENGINE_FRAME_BYTES = 256 * 1024;
/** A session ends (`provider_failed`) once more than this many invalid frames arrive… */
export const INVALID_FRAME_LIMIT = 50;
/** …within any window of this many milliseconds. */
export const INVALID_FRAME_WINDOW_MS = 10_000;
/**
 * Bytes of engine frames decoded per session per second, sustained (a token bucket of
 * `ENGINE_BURST_BYTES`): far above any real engine (24 kHz audio is 48 KB/s; base64 in
 * JSON 64 KB/s), so it only bounds the parsing one engine can make the process do.
 * Frames over it are refused undecoded and count as invalid.
 */
export const ENGINE_BYTES_PER_SECOND = 8 * 1024 * 1024;
/** The byte budget's burst: a whole long response sent at once fits. */
export const ENGINE_BURST_BYTES = 32 * 1024 * 1024;
/** At most one "invalid frame" log line per session per this many milliseconds. */
export const INVALID_FRAME_LOG_INTERVAL_MS = 10_000;

/** Longest id (response, item) taken from an engine. */
export const MAX_ID_LENGTH = 256;
/** Longest transcript text taken from an engine (one message or one accumulated turn). */
export const MAX_TRANSCRIPT_LENGTH = 16_384;
/** Longest error message taken from an engine (it is cut to 500 for use). */
export const MAX_ERROR_MESSAGE_LENGTH = 4096;

/** An engine-chosen id. */
export const engineId = () => z.string().max(MAX_ID_LENGTH);
/** An engine-chosen transcript. */
export const transcriptText = () => z.string().max(MAX_TRANSCRIPT_LENGTH);
/** An engine-chosen error message. */
export const errorMessage = () => z.string().max(MAX_ERROR_MESSAGE_LENGTH);
/** A sample rate an engine announces. */
export const sampleRate = () => z.int().min(8000).max(96_000);

/** `{role, text, final}`: a transcript message of ECEP and of vendor_b. */
export const transcriptMessage = () =>
  z.object({
    role: z.enum(["user", "agent"]),
    text: transcriptText(),
    final: z.boolean().default(true),
  });

/** `{message?, fatal}`: an error message of ECEP and of vendor_b. */
export const errorMessageWithFatal = () =>
  z.object({
    message: errorMessage().optional(),
    fatal: z.boolean().default(false),
  });

/**
 * A message of a `MessageSet`: its type under the set's key field `K` (`type` by
 * default) and its schema's output.
 */
export type MessageOf<
  S extends Record<string, z.ZodType>,
  K extends string = "type",
> = {
  [T in keyof S & string]: { [F in K]: T } & z.output<S[T]>;
}[keyof S & string];

/** The message type of a `MessageSet` value: `Message<typeof SOME_MESSAGES>`. */
export type Message<T> = T extends MessageSet<infer S, infer K>
  ? MessageOf<S, K>
  : never;

/** Why a frame was not used: fixed words, never the frame's content. */
export type InvalidReason =
  | "oversized text frame"
  | "oversized binary frame"
  | "bad JSON"
  | "not a JSON object"
  | "no type"
  | "unknown type"
  | "malformed message"
  | "unexpected binary frame"
  | "odd-length audio"
  | "bad base64 audio"
  | "over the byte rate";

export type Decoded<M> =
  | { ok: true; msg: M }
  /** Not counted: an unknown type of a protocol that grows (vendor APIs). */
  | { ok: false; ignored: true }
  | { ok: false; ignored: false; reason: InvalidReason; type?: string };

/**
 * The text messages of one protocol: a schema per message type, the type read from the
 * field `key` (`type` for most protocols; `event` for vendor_b). `unknownTypes:
 * "invalid"` counts a message of another type as invalid (ECEP, DECISIONS 7); `"ignore"`
 * drops it uncounted (vendor APIs add event types without notice).
 */
export class MessageSet<
  S extends Record<string, z.ZodType>,
  K extends string = "type",
> {
  readonly #byType: Map<string, z.ZodType>;
  readonly key: K;

  constructor(
    schemas: S,
    readonly unknownTypes: "invalid" | "ignore",
    key?: K,
  ) {
    this.#byType = new Map(Object.entries(schemas));
    this.key = key ?? ("type" as K);
  }

  /** A text frame (already size-checked) parsed, typed and checked against its schema. */
  decode(text: string): Decoded<MessageOf<S, K>> {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { ok: false, ignored: false, reason: "bad JSON" };
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      return { ok: false, ignored: false, reason: "not a JSON object" };
    }
    // An own property only: a key inherited through the prototype is no type.
    const type = Object.hasOwn(value, this.key)
      ? (value as Record<string, unknown>)[this.key]
      : undefined;
    if (typeof type !== "string") {
      return { ok: false, ignored: false, reason: "no type" };
    }
    const schema = this.#byType.get(type);
    if (!schema) {
      return this.unknownTypes === "ignore"
        ? { ok: false, ignored: true }
        : { ok: false, ignored: false, reason: "unknown type" };
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      return { ok: false, ignored: false, reason: "malformed message", type };
    }
    return {
      ok: true,
      msg: { ...(parsed.data as object), [this.key]: type } as MessageOf<S, K>,
    };
  }
}

/**
 * PCM16LE samples of base64 `b64`, or null when it is not base64 or not whole samples
 * (an odd byte count). The caller bounds its length (the frame cap).
 */
export function base64Pcm(b64: string): Int16Array | null {
  let bin: string;
  try {
    bin = atob(b64);
  } catch {
    return null;
  }
  if (bin.length % 2 !== 0) return null;
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytesToPcm(bytes);
}

/**
 * Counts one session's invalid frames: `record()` says when more than
 * `INVALID_FRAME_LIMIT` fell within `INVALID_FRAME_WINDOW_MS` (a flood), and whether a
 * log line is due (at most one per `INVALID_FRAME_LOG_INTERVAL_MS`, carrying how many
 * went unlogged meanwhile).
 */
export class InvalidFrameCounter {
  total = 0;
  #recent: number[] = [];
  #lastLog = -Infinity;
  #unlogged = 0;

  constructor(private readonly now: () => number) {}

  record(): { flood: boolean; log: { suppressed: number } | null } {
    const t = this.now();
    this.total++;
    this.#recent.push(t);
    while (
      this.#recent.length > 0 && t - this.#recent[0] >= INVALID_FRAME_WINDOW_MS
    ) this.#recent.shift();
    const flood = this.#recent.length > INVALID_FRAME_LIMIT;
    if (this.#recent.length > INVALID_FRAME_LIMIT + 1) this.#recent.shift();
    let log: { suppressed: number } | null = null;
    if (t - this.#lastLog >= INVALID_FRAME_LOG_INTERVAL_MS) {
      log = { suppressed: this.#unlogged };
      this.#unlogged = 0;
      this.#lastLog = t;
    } else this.#unlogged++;
    return { flood, log };
  }
}

/**
 * A session's frame byte budget: `ENGINE_BURST_BYTES`, refilled at
 * `ENGINE_BYTES_PER_SECOND`; `take(n)` is false (nothing taken) when `n` exceeds it.
 */
export class ByteBudget {
  #left = ENGINE_BURST_BYTES;
  #at: number;

  constructor(private readonly now: () => number) {
    this.#at = now();
  }

  take(bytes: number): boolean {
    const t = this.now();
    this.#left = Math.min(
      ENGINE_BURST_BYTES,
      this.#left + Math.max(0, t - this.#at) * ENGINE_BYTES_PER_SECOND / 1000,
    );
    this.#at = t;
    if (bytes > this.#left) return false;
    this.#left -= bytes;
    return true;
  }
}
