/**
 * The render worker: serves a `RenderBackend` (normally the built-in renderer) over the
 * small HTTP + WebSocket protocol of docs/render-worker.md, so rendering can run on other
 * machines. Every path but `/healthz` needs `Authorization: Bearer <token>`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "../log.ts";
import type { RenderBackend, RenderSession } from "../ports/render.ts";
import { MAX_MARK_TEXT, RenderStartError } from "../ports/render.ts";
import { SPEECH_TAG } from "./speech.ts";

export interface WorkerOptions {
  backend: RenderBackend;
  /** The bearer token clients must present. */
  token: string;
  log: Logger;
  /** A session with no stream attached and no request for this long is stopped. */
  idleTimeoutMs?: number;
  /** Bytes a stream socket may buffer before it is closed as too slow. */
  maxBufferedBytes?: number;
}

interface WorkerSession {
  session: RenderSession;
  socket: WebSocket | null;
  lastUsed: number;
  timer: ReturnType<typeof setInterval> | undefined;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function fail(status: number, error: string, message: string): Response {
  return json(status, { error, message });
}

const SESSION_PATH =
  /^\/v1\/render\/sessions\/([A-Za-z0-9-]{1,64})(\/[a-z]+)?$/;

/**
 * Builds the worker's request handler. `close()` force-stops every session (the
 * backend's processes included) and closes their sockets.
 */
export function createRenderWorker(options: WorkerOptions): {
  handler: (req: Request) => Promise<Response>;
  close: () => Promise<void>;
} {
  const { backend, log } = options;
  const idleMs = options.idleTimeoutMs ?? 15 * 60_000;
  const maxBuffered = options.maxBufferedBytes ?? 8 * 1024 * 1024;
  const expected = digest(`Bearer ${options.token}`);
  const sessions = new Map<string, WorkerSession>();

  const authorized = (req: Request) =>
    timingSafeEqual(digest(req.headers.get("authorization") ?? ""), expected);

  const remove = async (
    id: string,
    graceful: boolean,
    timeoutMs: number,
  ): Promise<{ clean: boolean; segments: number } | null> => {
    const ws = sessions.get(id);
    if (!ws) return null;
    sessions.delete(id);
    clearInterval(ws.timer);
    const r = await ws.session.stop({ graceful, timeoutMs });
    ws.socket?.close(1000, "session stopped");
    return { clean: r.clean, segments: ws.session.segmentsRendered };
  };

  const openSession = async (req: Request): Promise<Response> => {
    let body: { session_id?: unknown; avatar_id?: unknown; bg_id?: unknown };
    try {
      body = await req.json();
    } catch {
      return fail(400, "invalid", "body must be JSON");
    }
    const { session_id, avatar_id, bg_id } = body;
    if (
      typeof session_id !== "string" || typeof avatar_id !== "string" ||
      typeof bg_id !== "string"
    ) {
      return fail(
        400,
        "invalid",
        "session_id, avatar_id and bg_id are required",
      );
    }
    let session: RenderSession;
    try {
      session = await backend.open({
        sessionId: session_id,
        avatarId: avatar_id,
        bgId: bg_id,
      });
    } catch (err) {
      if (err instanceof RenderStartError) {
        const status = err.kind === "misconfigured"
          ? 400
          : err.kind === "timeout"
          ? 504
          : 502;
        return fail(status, err.kind, err.message);
      }
      log.error("render worker open failed", { err });
      return fail(502, "failed", "render session failed to start");
    }
    const id = crypto.randomUUID();
    const entry: WorkerSession = {
      session,
      socket: null,
      lastUsed: Date.now(),
      timer: undefined,
    };
    entry.timer = setInterval(() => {
      if (!entry.socket && Date.now() - entry.lastUsed > idleMs) {
        log.warn("render worker session idle, stopping", { id });
        void remove(id, false, 0);
      }
    }, Math.min(idleMs, 30_000));
    sessions.set(id, entry);
    return json(201, { id });
  };

  const stream = (req: Request, entry: WorkerSession): Response => {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return fail(400, "invalid", "expected a WebSocket upgrade");
    }
    // The viewer's audio codec (`?audio=opus`, else AAC): nothing else is accepted.
    const audio = new URL(req.url).searchParams.get("audio") ?? "aac";
    if (audio !== "aac" && audio !== "opus") {
      return fail(400, "invalid", "audio must be aac or opus");
    }
    let upgrade: Deno.WebSocketUpgrade;
    try {
      upgrade = Deno.upgradeWebSocket(req);
    } catch {
      // No or a bad Sec-WebSocket-Key / -Version: a client error, not a 500.
      return fail(400, "invalid", "not a valid WebSocket upgrade");
    }
    const { socket, response } = upgrade;
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      const old = entry.socket;
      entry.socket = socket;
      old?.close(4000, "taken over");
      entry.session.attach({
        audio,
        onInit(mime, init) {
          if (socket.readyState !== WebSocket.OPEN) return;
          socket.send(JSON.stringify({ type: "init", mime }));
          socket.send(init);
        },
        onSegment(segment) {
          if (socket.readyState !== WebSocket.OPEN) return;
          if (socket.bufferedAmount > maxBuffered) {
            socket.close(1013, "stream consumer too slow");
            return;
          }
          socket.send(segment);
        },
        onSpeech(e) {
          if (socket.readyState !== WebSocket.OPEN) return;
          socket.send(JSON.stringify({
            type: "speech",
            speaking: e.speaking,
            tag: e.tag,
            media_time_ms: e.mediaTimeMs,
            ...(e.cut ? { cut: { played_ms: e.cut.playedMs } } : {}),
            ...(e.ended ? { ended: true } : {}),
            ...(e.mark !== undefined ? { mark: e.mark } : {}),
          }));
        },
        onError(err) {
          if (socket.readyState !== WebSocket.OPEN) return;
          socket.send(JSON.stringify({ type: "error", message: err.message }));
          socket.close(1011, "render stream failed");
        },
      });
    };
    socket.onclose = () => {
      if (entry.socket !== socket) return;
      entry.socket = null;
      entry.lastUsed = Date.now();
      entry.session.detach();
    };
    return response;
  };

  const handler = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return json(200, { ok: true });
    if (!authorized(req)) return fail(401, "unauthorized", "bad credentials");
    if (url.pathname === "/v1/render/sessions") {
      if (req.method !== "POST") return fail(405, "method", "use POST");
      return await openSession(req);
    }
    const m = SESSION_PATH.exec(url.pathname);
    const entry = m ? sessions.get(m[1]) : undefined;
    if (!m || !entry) return fail(404, "not_found", "no such render session");
    const [, id, sub] = m;
    entry.lastUsed = Date.now();
    const route = `${req.method} ${sub ?? ""}`;
    switch (route) {
      case "GET /stream":
        return stream(req, entry);
      case "POST /audio": {
        const rate = Number(url.searchParams.get("sample_rate"));
        if (!Number.isInteger(rate) || rate < 8000 || rate > 48000) {
          return fail(400, "invalid", "sample_rate must be 8000..48000");
        }
        const tag = url.searchParams.get("tag") ?? undefined;
        if (tag !== undefined && !SPEECH_TAG.test(tag)) {
          return fail(400, "invalid", "tag must be 1..64 of A-Z a-z 0-9 _ -");
        }
        const bytes = new Uint8Array(await req.arrayBuffer());
        const pcm = new Int16Array(bytes.length >> 1);
        new Uint8Array(pcm.buffer).set(bytes.subarray(0, pcm.length * 2));
        if (!entry.session.pushAudio(pcm, rate, tag)) {
          return fail(507, "full", "agent audio queue is full");
        }
        return new Response(null, { status: 204 });
      }
      case "POST /end": {
        const tag = url.searchParams.get("tag") ?? "";
        if (!SPEECH_TAG.test(tag)) {
          return fail(400, "invalid", "tag must be 1..64 of A-Z a-z 0-9 _ -");
        }
        const done = await entry.session.endAudio(tag);
        return json(200, { ended: done });
      }
      case "POST /mark": {
        const tag = url.searchParams.get("tag") ?? "";
        const rawId = url.searchParams.get("id");
        const id = rawId === null || rawId === "" ? NaN : Number(rawId);
        const raw = url.searchParams.get("offset_ms");
        const offset = raw === null ? undefined : Number(raw || NaN);
        if (
          !SPEECH_TAG.test(tag) || !Number.isSafeInteger(id) ||
          (offset !== undefined && !(offset >= 0 && offset <= 3_600_000))
        ) {
          return fail(400, "invalid", "tag, id and offset_ms are required");
        }
        // Body (optional): {"text": string}, the caption's words (their end cues
        // the head).
        const raw2 = await req.text();
        let text: string | undefined;
        if (raw2 !== "") {
          const body = (() => {
            try {
              return JSON.parse(raw2);
            } catch {
              return null;
            }
          })();
          if (
            !body || typeof body !== "object" ||
            (body.text !== undefined &&
              (typeof body.text !== "string" ||
                body.text.length > MAX_MARK_TEXT))
          ) {
            return fail(400, "invalid", "text must be a string of ≤ 1000");
          }
          text = body.text;
        }
        entry.session.markText(tag, id, offset, text);
        return new Response(null, { status: 204 });
      }
      case "POST /listen": {
        const speaking = url.searchParams.get("speaking");
        if (speaking !== "true" && speaking !== "false") {
          return fail(400, "invalid", "speaking must be true or false");
        }
        entry.session.listen(speaking === "true");
        return new Response(null, { status: 204 });
      }
      case "POST /interrupt": {
        // Body (optional): {"tag"?: string, "all"?: boolean}; answers the cut.
        const body = await req.json().catch(() => ({}));
        const tag = body && typeof body.tag === "string" &&
            SPEECH_TAG.test(body.tag)
          ? body.tag as string
          : undefined;
        const all = body?.all === true;
        const cut = await entry.session.interrupt({ tag, all });
        return json(
          200,
          cut
            ? {
              tag: cut.tag,
              played_ms: cut.playedMs,
              was_speaking: cut.wasSpeaking,
            }
            : {},
        );
      }
      case "GET ":
        return json(200, {
          segments_rendered: entry.session.segmentsRendered,
          stats: entry.session.stats(),
        });
      case "DELETE ": {
        const graceful = url.searchParams.get("graceful") === "true";
        const timeoutMs = Math.min(
          60_000,
          Math.max(0, Number(url.searchParams.get("timeout_ms")) || 0),
        );
        const r = await remove(id, graceful, timeoutMs);
        if (!r) return fail(404, "not_found", "no such render session");
        return json(200, { clean: r.clean, segments_rendered: r.segments });
      }
      default:
        return fail(405, "method", "method not allowed here");
    }
  };

  const close = async () => {
    await Promise.all([...sessions.keys()].map((id) => remove(id, false, 0)));
  };
  return { handler, close };
}
