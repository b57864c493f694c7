/**
 * A `RenderBackend` that renders on a render worker (./worker.ts) over HTTP control calls
 * and one WebSocket per stream, authenticated with a bearer token (docs/rendering.md).
 * Agent audio is posted in order, one request in flight, from a queue bounded at ~2 s.
 */
import type { Logger } from "../log.ts";
import {
  type RenderBackend,
  type RenderOpenOptions,
  type RenderSession,
  type RenderSink,
  RenderStartError,
  type RenderStats,
} from "./port.ts";

export interface RemoteOptions {
  /** Worker base URL, e.g. `http://render-1.internal:8080`. */
  url: string;
  token: string;
  /** Bound on the open call. */
  startTimeoutMs?: number;
}

type Outgoing =
  | { kind: "audio"; pcm: Int16Array; rate: number }
  | { kind: "interrupt" };

const MAX_QUEUED_SECONDS = 2;

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
  #queuedSeconds = 0;
  #dropped = 0;
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

  pushAudio(pcm: Int16Array, sampleRate: number): void {
    if (this.#closed || pcm.length === 0) return;
    this.#queue.push({ kind: "audio", pcm: pcm.slice(), rate: sampleRate });
    this.#queuedSeconds += pcm.length / sampleRate;
    while (this.#queuedSeconds > MAX_QUEUED_SECONDS) {
      const i = this.#queue.findIndex((x) => x.kind === "audio");
      const item = this.#queue[i];
      if (!item || item.kind !== "audio") break;
      this.#queue.splice(i, 1);
      this.#queuedSeconds -= item.pcm.length / item.rate;
      this.#dropped += Math.round(item.pcm.length * 48000 / item.rate);
    }
    this.#kick();
  }

  interrupt(): void {
    if (this.#closed) return;
    this.#queue = [{ kind: "interrupt" }];
    this.#queuedSeconds = 0;
    this.#kick();
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
    this.#queue = [];
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
      let path: string;
      let body: Uint8Array<ArrayBuffer> | undefined;
      if (head.kind === "interrupt") {
        path = "/interrupt";
      } else {
        // Coalesce consecutive chunks at the same rate into one request.
        const parts = [head.pcm];
        while (
          this.#queue[0]?.kind === "audio" && this.#queue[0].rate === head.rate
        ) {
          parts.push((this.#queue.shift() as { pcm: Int16Array }).pcm);
        }
        let n = 0;
        for (const p of parts) n += p.length;
        this.#queuedSeconds = Math.max(0, this.#queuedSeconds - n / head.rate);
        const pcm = new Int16Array(n);
        let at = 0;
        for (const p of parts) (pcm.set(p, at), at += p.length);
        body = new Uint8Array(pcm.buffer);
        path = `/audio?sample_rate=${head.rate}`;
      }
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
        await res.body?.cancel();
        if (!res.ok) {
          this.log.warn("render worker refused audio", { status: res.status });
        }
      } catch (err) {
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
