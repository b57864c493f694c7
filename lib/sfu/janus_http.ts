/**
 * Janus's HTTP API (the "Janus API" with `token_auth`): sessions, plugin handles,
 * messages and the long-poll event channel. Every answer is parsed by a schema before
 * use; anything else is an `SfuError` of kind `connection`.
 */
import { z } from "zod";
import { SfuError } from "../ports/sfu.ts";

const jsepSchema = z.object({
  type: z.enum(["offer", "answer"]),
  sdp: z.string().max(64 * 1024),
});

const pluginDataSchema = z.object({
  plugin: z.string(),
  data: z.record(z.string(), z.unknown()),
});

/** One message from Janus: a synchronous answer or an event off the long poll. */
export const janusMessageSchema = z.looseObject({
  janus: z.string(),
  transaction: z.string().optional(),
  session_id: z.number().optional(),
  sender: z.number().optional(),
  data: z.looseObject({ id: z.number().int() }).optional(),
  error: z.object({ code: z.number(), reason: z.string() }).optional(),
  plugindata: pluginDataSchema.optional(),
  jsep: jsepSchema.optional(),
  candidate: z.looseObject({
    candidate: z.string().optional(),
    sdpMid: z.string().nullish(),
    sdpMLineIndex: z.number().nullish(),
    completed: z.boolean().optional(),
  }).optional(),
  reason: z.string().optional(),
});
export type JanusMessage = z.infer<typeof janusMessageSchema>;

/** Janus core error codes that mean "no capacity" rather than "broken". */
const NOT_ACCEPTING_SESSIONS = 490;
/** Unauthorized (wrong or missing token). */
const UNAUTHORIZED = 403;
/** The session is gone (timed out, destroyed). */
export const SESSION_NOT_FOUND = 458;

const REQUEST_TIMEOUT_MS = 5_000;
/** Janus holds a long poll up to 30 s; a little more before we call it dead. */
const POLL_TIMEOUT_MS = 40_000;

export class JanusHttp {
  readonly #url: string;
  readonly #token: string;

  constructor(url: string, token: string) {
    this.#url = url.replace(/\/+$/, "");
    this.#token = token;
  }

  /** POSTs a Janus API request at `path` (`/sid`, `/sid/hid`) and parses the answer. */
  async request(
    path: string,
    body: Record<string, unknown>,
    signal?: AbortSignal,
    transaction: string = crypto.randomUUID(),
  ): Promise<JanusMessage> {
    const answer = await this.#fetch(
      `${this.#url}${path}`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, transaction, token: this.#token }),
      },
      REQUEST_TIMEOUT_MS,
      signal,
    );
    const msgs = parseMessages(answer);
    if (msgs.length !== 1) {
      throw new SfuError("connection", "Janus answered an unexpected shape");
    }
    const msg = msgs[0];
    if (msg.janus === "error") throw coreError(msg);
    return msg;
  }

  /** Creates a Janus session; resolves with its id. */
  async createSession(signal?: AbortSignal): Promise<number> {
    const msg = await this.request("", { janus: "create" }, signal);
    return requireId(msg);
  }

  /** Attaches the streaming plugin in session `sid`; resolves with the handle id. */
  async attach(sid: number, signal?: AbortSignal): Promise<number> {
    const msg = await this.request(`/${sid}`, {
      janus: "attach",
      plugin: "janus.plugin.streaming",
    }, signal);
    return requireId(msg);
  }

  /** Destroys session `sid`; a session already gone counts as done. */
  async destroySession(sid: number, signal?: AbortSignal): Promise<void> {
    try {
      await this.request(`/${sid}`, { janus: "destroy" }, signal);
    } catch (err) {
      if (err instanceof JanusCoreError && err.code === SESSION_NOT_FOUND) {
        return;
      }
      throw err;
    }
  }

  /**
   * One long poll on session `sid`'s event channel (`?token=` as token_auth needs);
   * resolves with the events (possibly only a keepalive).
   */
  async poll(sid: number, signal?: AbortSignal): Promise<JanusMessage[]> {
    const url = `${this.#url}/${sid}?maxev=10&token=${
      encodeURIComponent(this.#token)
    }`;
    const msgs = parseMessages(
      await this.#fetch(url, { method: "GET" }, POLL_TIMEOUT_MS, signal),
    );
    for (const m of msgs) if (m.janus === "error") throw coreError(m);
    return msgs;
  }

  async #fetch(
    url: string,
    init: RequestInit,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (signal) signals.push(signal);
    let res: Response;
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.any(signals) });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new SfuError("connection", "The SFU cannot be reached", {
        cause: err,
      });
    }
    const text = await res.text().catch(() => "");
    if (res.status === 403) {
      throw new SfuError("connection", "The SFU refused our token");
    }
    if (!res.ok) {
      throw new SfuError("connection", `The SFU answered HTTP ${res.status}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new SfuError("connection", "The SFU answered something not JSON");
    }
  }
}

/** A Janus core error (`"janus": "error"`) with its code. */
export class JanusCoreError extends SfuError {
  readonly code: number;
  constructor(code: number, reason: string) {
    super(
      code === NOT_ACCEPTING_SESSIONS
        ? "full"
        : code === UNAUTHORIZED
        ? "connection"
        : "negotiation",
      `Janus error ${code}: ${reason.slice(0, 200)}`,
    );
    this.code = code;
  }
}

function coreError(msg: JanusMessage): JanusCoreError {
  return new JanusCoreError(
    msg.error?.code ?? 0,
    msg.error?.reason ?? "unknown",
  );
}

function parseMessages(raw: unknown): JanusMessage[] {
  const list = Array.isArray(raw) ? raw : [raw];
  const out: JanusMessage[] = [];
  for (const item of list) {
    const parsed = janusMessageSchema.safeParse(item);
    if (!parsed.success) {
      throw new SfuError("connection", "The SFU answered an unexpected shape");
    }
    out.push(parsed.data);
  }
  return out;
}

function requireId(msg: JanusMessage): number {
  if (msg.janus !== "success" || msg.data === undefined) {
    throw new SfuError("connection", "The SFU answered without an id");
  }
  return msg.data.id;
}
