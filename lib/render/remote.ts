/**
 * A `RenderBackend` that renders on a render worker (./worker.ts) over HTTP control calls
 * and one WebSocket per stream, authenticated with a bearer token (docs/render-worker.md).
 * Agent audio, caption marks and turn ends are posted in order, one request in flight;
 * audio is never dropped to make room: past `MAX_AGENT_AUDIO_AHEAD_MS` waiting here, or
 * once the worker refused a push for its own bound, `pushAudio` answers false.
 */
import type { Logger } from "../log.ts";
import {
  MAX_MARK_TEXT,
  type RenderBackend,
  type RenderOpenOptions,
  type RenderSession,
  type RenderSink,
  RenderStartError,
  type RenderStats,
  type SpeechCut,
} from "../ports/render.ts";
import {
  audioRequest,
  controlRequest,
  type Outgoing,
  speechCut,
  speechEvent,
  type WorkerRequest,
} from "./remote_wire.ts";
import { MAX_MARKS } from "./speech_runs.ts";
import { MAX_AGENT_AUDIO_AHEAD_MS } from "./voice.ts";

export interface RemoteOptions {
  /** Worker base URL, e.g. `http://render-1.internal:8080`. */
  url: string;
  token: string;
  /** Bound on the open call. */
  startTimeoutMs?: number;
}

const MAX_QUEUED_SECONDS = MAX_AGENT_AUDIO_AHEAD_MS / 1000;

/** Deno's WebSocket takes upgrade-request headers; the DOM typings do not know it. */
const DenoWebSocket = WebSocket as unknown as new (
  url: URL,
  init: { headers: Record<string, string> },
) => WebSocket;

class RemoteSession implements RenderSession {
  #socket: WebSocket | null = null;
  #socketClosed: Promise<void> = Promise.resolve();
  #segments = 0;
  #queue: Outgoing[] = [];
  /** Marks in `#queue`: at most `MAX_MARKS`, as the worker keeps (the oldest go). */
  #marks = 0;
  #queuedSeconds = 0;
  #dropped = 0;
  /** The worker refused audio for its bound: every later push is refused too. */
  #overflowed = false;
  #pump: Promise<void> | null = null;
  #closed = false;
  #stopping: Promise<{ clean: boolean }> | null = null;

  constructor(
    private readonly base: string,
    private readonly auth: string,
    private readonly log: Logger,
  ) {}

  get segmentsRendered(): number {
    return this.#segments;
  }

  stats(): RenderStats {
    return {
      audioLatencyMs: [],
      droppedAudioSamples: this.#dropped,
      queuedAudioSamples: Math.round(this.#queuedSeconds * 48000),
      skippedDraws: 0,
    };
  }

  attach(sink: RenderSink): void {
    if (this.#closed) {
      sink.onError(new Error("render session stopped"));
      return;
    }
    this.detach();
    const url = new URL(`${this.base}/stream`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (sink.audio === "opus") url.searchParams.set("audio", "opus");
    const ws = new DenoWebSocket(url, {
      headers: { authorization: this.auth },
    });
    ws.binaryType = "arraybuffer";
    this.#socket = ws;
    let mime: string | null = null;
    let gotInit = false;
    let failed = false;
    const failOnce = (err: Error) => {
      if (failed || this.#socket !== ws) return;
      failed = true;
      this.#socket = null;
      ws.close();
      sink.onError(err);
    };
    ws.onmessage = (e) => {
      if (this.#socket !== ws) return;
      if (typeof e.data === "string") {
        try {
          const msg = JSON.parse(e.data);
          if (msg.type === "init" && typeof msg.mime === "string") {
            mime = msg.mime;
          } else if (msg.type === "speech") {
            const event = speechEvent(msg);
            if (event) sink.onSpeech?.(event);
          } else if (msg.type === "error") {
            failOnce(new Error(String(msg.message ?? "render stream failed")));
          }
        } catch {
          failOnce(new Error("render worker sent an unreadable message"));
        }
        return;
      }
      const bytes = new Uint8Array(e.data as ArrayBuffer);
      if (!gotInit) {
        if (mime === null) {
          failOnce(new Error("render worker sent media before init"));
          return;
        }
        gotInit = true;
        sink.onInit(mime, bytes);
      } else {
        this.#segments++;
        sink.onSegment(bytes);
      }
    };
    this.#socketClosed = new Promise((resolve) => {
      ws.onclose = () => {
        resolve();
        if (this.#socket === ws && !this.#stopping) {
          failOnce(new Error("render stream closed"));
        }
      };
    });
  }

  detach(): void {
    const ws = this.#socket;
    this.#socket = null;
    if (ws && ws.readyState !== WebSocket.CLOSED) ws.close(1000);
  }

  pushAudio(pcm: Int16Array, sampleRate: number, tag?: string): boolean {
    if (this.#closed || pcm.length === 0) return true;
    const seconds = pcm.length / sampleRate;
    if (
      this.#overflowed || this.#queuedSeconds + seconds > MAX_QUEUED_SECONDS
    ) {
      this.#dropped += Math.round(seconds * 48000);
      return false;
    }
    this.#queue.push({
      kind: "audio",
      pcm: pcm.slice(),
      rate: sampleRate,
      tag,
    });
    this.#queuedSeconds += seconds;
    this.#kick();
    return true;
  }

  endAudio(tag: string): Promise<boolean> {
    if (this.#closed) return Promise.resolve(true);
    return new Promise((done) => {
      this.#queue.push({ kind: "end", tag, done });
      this.#kick();
    });
  }

  markText(tag: string, id: number, offsetMs?: number, text?: string): void {
    if (this.#closed) return;
    if (this.#marks >= MAX_MARKS) {
      this.#queue.splice(this.#queue.findIndex((x) => x.kind === "mark"), 1);
    } else this.#marks++;
    this.#queue.push({
      kind: "mark",
      tag,
      id,
      offsetMs,
      text: text === undefined ? undefined : text.slice(-MAX_MARK_TEXT),
    });
    this.#kick();
  }

  listen(speaking: boolean): void {
    if (this.#closed) return;
    // Only the latest state matters: a waiting one is replaced, never queued twice.
    const last = this.#queue.at(-1);
    if (last?.kind === "listen") last.speaking = speaking;
    else this.#queue.push({ kind: "listen", speaking });
    this.#kick();
  }

  interrupt(
    options: { tag?: string; all?: boolean } = {},
  ): Promise<SpeechCut | null> {
    if (this.#closed) return Promise.resolve(null);
    const all = options.all === true || options.tag === undefined;
    // Drop what has not been posted yet here; the worker drops what it holds.
    this.#queue = this.#queue.filter((x) => {
      const drop = x.kind === "audio" && (all || x.tag === options.tag);
      if (drop) this.#queuedSeconds -= x.pcm.length / x.rate;
      return !drop;
    });
    this.#queuedSeconds = Math.max(0, this.#queuedSeconds);
    return new Promise((done) => {
      this.#queue.push({ kind: "interrupt", tag: options.tag, all, done });
      this.#kick();
    });
  }

  stop(
    options: { graceful: boolean; timeoutMs: number },
  ): Promise<{ clean: boolean }> {
    this.#stopping ??= this.#stop(options);
    return this.#stopping;
  }

  async #stop(
    options: { graceful: boolean; timeoutMs: number },
  ): Promise<{ clean: boolean }> {
    this.#closed = true;
    for (const x of this.#queue) {
      if (x.kind === "interrupt") x.done(null);
      else if (x.kind === "end") x.done(true);
    }
    this.#queue = [];
    this.#marks = 0;
    await this.#pump;
    let clean = false;
    try {
      const q = `graceful=${options.graceful}&timeout_ms=${options.timeoutMs}`;
      const res = await fetch(`${this.base}?${q}`, {
        method: "DELETE",
        headers: { authorization: this.auth },
        signal: AbortSignal.timeout(options.timeoutMs + 2000),
      });
      const body = await res.json().catch(() => ({}));
      clean = res.ok && body.clean === true;
      if (!res.ok) {
        this.log.warn("render worker stop failed", { status: res.status });
      }
    } catch (err) {
      this.log.warn("render worker stop failed", { err });
    }
    this.detach();
    await this.#socketClosed;
    return { clean };
  }

  #kick(): void {
    if (this.#pump) return;
    this.#pump = this.#drain().finally(() => {
      this.#pump = null;
      if (this.#queue.length > 0 && !this.#closed) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const head = this.#queue.shift()!;
      let request: WorkerRequest;
      if (head.kind === "audio") {
        // Coalesce consecutive chunks of one turn at one rate into one request.
        const parts = [head.pcm];
        while (
          this.#queue[0]?.kind === "audio" &&
          this.#queue[0].rate === head.rate && this.#queue[0].tag === head.tag
        ) {
          parts.push((this.#queue.shift() as { pcm: Int16Array }).pcm);
        }
        request = audioRequest(parts, head.rate, head.tag);
        this.#queuedSeconds = Math.max(
          0,
          this.#queuedSeconds - request.samples / head.rate,
        );
      } else {
        if (head.kind === "mark") this.#marks--;
        request = controlRequest(head);
      }
      const { path, body } = request;
      try {
        const res = await fetch(`${this.base}${path}`, {
          method: "POST",
          headers: {
            authorization: this.auth,
            "content-type": "application/octet-stream",
          },
          body,
          signal: AbortSignal.timeout(5000),
        });
        if (head.kind === "interrupt") {
          const answer = res.ok ? await res.json().catch(() => ({})) : {};
          head.done(speechCut(answer ?? {}));
        } else if (head.kind === "end") {
          const answer = res.ok ? await res.json().catch(() => ({})) : {};
          head.done(answer?.ended !== false);
        } else {
          await res.body?.cancel();
        }
        // 507: the worker's queue holds its bound; the media plane ends the session.
        if (res.status === 507) this.#overflowed = true;
        if (!res.ok) {
          this.log.warn("render worker refused a request", {
            status: res.status,
            path: head.kind,
          });
        }
      } catch (err) {
        if (head.kind === "interrupt") head.done(null);
        else if (head.kind === "end") head.done(true);
        this.log.warn("render worker audio post failed", { err });
      }
    }
  }
}

/**
 * The remote renderer: sessions live on the worker at `options.url`. `open` rejects with
 * RenderStartError: `misconfigured` (unknown avatar/background, refused token),
 * `timeout` (no answer within `startTimeoutMs`) or `failed`.
 */
export function createRemoteRenderer(
  deps: { log: Logger },
  options: RemoteOptions,
): RenderBackend {
  const base = options.url.replace(/\/+$/, "");
  const auth = `Bearer ${options.token}`;
  return {
    async open(o: RenderOpenOptions): Promise<RenderSession> {
      let res: Response;
      try {
        res = await fetch(`${base}/v1/render/sessions`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({
            session_id: o.sessionId,
            avatar_id: o.avatarId,
            bg_id: o.bgId,
          }),
          signal: AbortSignal.timeout(options.startTimeoutMs ?? 15_000),
        });
      } catch (err) {
        if (err instanceof DOMException && err.name === "TimeoutError") {
          throw new RenderStartError(
            "timeout",
            "render worker did not answer in time",
          );
        }
        deps.log.warn("render worker unreachable", { err });
        throw new RenderStartError("failed", "render worker unreachable");
      }
      const body = await res.json().catch(() => ({}));
      if (res.status === 201 && typeof body.id === "string") {
        return new RemoteSession(
          `${base}/v1/render/sessions/${body.id}`,
          auth,
          deps.log,
        );
      }
      deps.log.warn("render worker refused the session", {
        status: res.status,
      });
      if (res.status === 400 || res.status === 401) {
        throw new RenderStartError(
          "misconfigured",
          "render worker refused the session",
        );
      }
      if (res.status === 504) {
        throw new RenderStartError("timeout", "render worker timed out");
      }
      throw new RenderStartError(
        "failed",
        "render worker failed to start the session",
      );
    },
  };
}
