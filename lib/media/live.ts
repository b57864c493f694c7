/**
 * One live session on the instance that holds it: the browser socket (replaced on
 * takeover), the conversation engine and the renderer, and the glue between them.
 */
import type { AppDeps } from "../deps.ts";
import { persistViewerStats, ViewerStats } from "./viewer_stats.ts";
import type { EndReason } from "../api/schemas.ts";
import type { EngineConnection, EngineEvents } from "../ports/providers.ts";
import type {
  AudioCodec,
  RenderSession,
  RenderSink,
  SpeechEvent,
} from "../ports/render.ts";
import { Turns } from "./turns.ts";
import { liveEngineEvents } from "./engine_events.ts";
import { rejectsVideo } from "../sfu/mod.ts";
import type { SfuLink } from "./sfu_signalling.ts";
import {
  bindSocket,
  contain,
  containAll,
  CONTAINED,
  type FailureSource,
} from "./contain.ts";
import {
  closeSocket,
  Downlink,
  type DownlinkStats,
  sendJson,
} from "./downlink.ts";
import { FrameGate } from "./gate.ts";
import { Uplink, type UplinkStats, type WebrtcMessage } from "./uplink.ts";
import { stopPipeline } from "./teardown.ts";
import { RestartWindow } from "./restarts.ts";

import {
  CLOSE_TAKEN_OVER,
  CLOSE_UNSUPPORTED_MEDIA,
  endedMessage,
  type ServerMessage,
  type SocketErrorCode,
} from "./protocol.ts";

/** Counters of one live session, for logs, the end result and tests. */
export type LiveStats = DownlinkStats & UplinkStats;

export class LiveSession {
  socket: WebSocket | null = null;
  engine: EngineConnection | null = null;
  render: RenderSession | null = null;
  /** A webrtc_sfu session's SFU side: media goes out as RTP, sockets get WebRTC offers. */
  sfu: SfuLink | null = null;
  /**
   * Created `auto` (webrtc_sfu sessions): a socket whose browser cannot play WebRTC is
   * served fMP4 from the same renderer; else it gets the fatal `unsupported_media`.
   */
  fmp4Fallback = false;
  readonly stats: LiveStats = {
    segmentsSent: 0,
    segmentsDropped: 0,
    framesReceived: 0,
    invalidMessages: 0,
    oversizeFrames: 0,
    framesThrottled: 0,
  };
  onInitSent: (() => void) | null = null;
  /** The avatar's kind, for metrics. */
  avatarKind: "builtin" | "photo" = "builtin";
  /** `stacked`: the video carries alpha (transparent background, DECISIONS 6). */
  alpha: "stacked" | null = null;
  /** Called when the last socket goes away (not on takeover). */
  onDetached: (() => void) | null = null;
  /**
   * Called when something ends the session: the engine ended the conversation
   * (`provider_ended`), the engine failed (`provider_failed`), the renderer failed for
   * good (`render_failed`), or a handler of this session threw (contained, see
   * ./contain.ts; the reason follows its source). `why` says what, for the warning.
   */
  onFailed:
    | ((why: string, source: FailureSource, reason: EndReason) => void)
    | null = null;
  /** The current socket's stream failures of the last minute. */
  private restarts = new RestartWindow();
  closed = false;

  /** The browser's frames, whichever socket carries them. */
  private readonly uplink: Uplink;
  /** What this session's viewer reports it experiences (`client.stats`). */
  readonly viewer: ViewerStats;
  /** The audio codec the current socket's player decodes (`media.config`). */
  private audio: AudioCodec = "aac";
  /** On a webrtc_sfu session: the socket served fMP4 instead (`webrtc.unsupported`). */
  private fmp4Socket: WebSocket | null = null;
  /** The socket whose stream has its init segment (speech events can reach it). */
  private streamingTo: WebSocket | null = null;
  /** The last `session.state` sent through `sendState` (also for metrics). */
  lastState: string | null = null;
  /** User and avatar turns, speech on the timeline, interruption. */
  readonly turns: Turns = new Turns({
    send: (msg) => this.send(msg),
    render: () => this.render,
    engine: () => this.engine,
    streaming: () =>
      this.sfu !== null ||
      (this.socket !== null && this.streamingTo === this.socket),
    overflow: () =>
      this.onFailed?.(
        "the conversation engine sent more audio ahead than the session holds",
        "provider",
        "provider_failed",
      ),
  });

  constructor(readonly deps: AppDeps, readonly sessionId: string) {
    this.viewer = new ViewerStats(
      deps.metrics,
      deps.now,
      persistViewerStats(deps, sessionId),
    );
    this.uplink = new Uplink({
      sessionId,
      log: deps.log,
      stats: this.stats,
      turns: this.turns,
      engine: () => this.engine,
      render: () => this.render,
      send: (msg) => this.send(msg),
      sendError: (code, fatal) => this.sendError(code, fatal),
      webrtc: (msg) => this.onWebrtc(msg),
      viewerStats: (msg) => this.viewer.report(msg),
      audioCodec: (audio) => this.setAudio(audio),
    });
  }

  /** The player asks for another audio codec: its fMP4 stream restarts in it. */
  private setAudio(audio: AudioCodec): void {
    const ws = this.socket;
    if (!ws || audio === this.audio) return;
    this.audio = audio;
    if (this.render && (!this.sfu || this.fmp4Socket === ws)) {
      this.render.attach(this.sinkFor(ws));
    }
  }

  /** A contained handler threw: the session ends as a failure of its source. */
  private readonly contained = (source: FailureSource): void => {
    const [what, reason] = CONTAINED[source];
    this.onFailed?.(`internal error handling the ${what}`, source, reason);
  };

  /**
   * Engine callbacks, bound to this session (./engine_events.ts). Each is contained: a
   * throw in one ends this session as a provider failure.
   */
  engineEvents(onReady: (rate: number) => void): EngineEvents {
    return liveEngineEvents({
      sessionId: this.sessionId,
      log: this.deps.log,
      turns: this.turns,
      closed: () => this.closed,
      sendError: (code, fatal) => this.sendError(code, fatal),
      failed: (why, source, reason) => this.onFailed?.(why, source, reason),
      contained: this.contained,
    }, onReady);
  }

  /** The renderer's sink for the current socket; a throw in it ends the session as a render failure. */
  private sinkFor(ws: WebSocket): RenderSink {
    return containAll(
      this.deps.log,
      "render",
      "render sink",
      this.contained,
      this.rawSink(ws),
    );
  }

  private rawSink(ws: WebSocket): RenderSink {
    const link = new Downlink(
      ws,
      this.stats,
      (reason) => this.deps.metrics.segmentsDropped.inc({ reason }),
    );
    return {
      audio: this.audio,
      onInit: (mime, init) => {
        if (this.socket !== ws) return;
        link.init(mime, init, this.alpha);
        this.streamingTo = ws;
        this.turns.newStream();
        this.onInitSent?.();
      },
      onSegment: (segment) => {
        if (this.socket === ws) link.segment(segment);
      },
      onSpeech: (event) => {
        if (this.socket === ws) this.turns.speech(event);
      },
      onError: (err) => {
        this.deps.log.error("render error", {
          session_id: this.sessionId,
          err,
        });
        this.sendError("avatar_render_failed", false);
        this.restartStream(ws);
      },
    };
  }

  /**
   * A failed stream (e.g. an encoder that fell behind) restarts on the same socket: a new
   * `media.init` and init segment follow, and the browser resets its MediaSource. More
   * than `MAX_STREAM_RESTARTS` failures a minute end the session instead.
   */
  private restartStream(ws: WebSocket): void {
    if (this.closed || this.socket !== ws || !this.render) return;
    this.deps.metrics.streamRestarts.inc();
    if (!this.restarts.allow(performance.now())) {
      this.onFailed?.(
        "the renderer failed repeatedly",
        "render",
        "render_failed",
      );
      return;
    }
    this.render.attach(this.sinkFor(ws));
  }

  /**
   * Makes `ws` the session's socket. An older socket gets `session_already_active` and
   * is closed with 4000; the renderer starts a fresh stream for the new one.
   */
  attach(ws: WebSocket, status: string): void {
    const old = this.socket;
    this.socket = ws;
    // A new socket's player says for itself whether it decodes Opus (`media.config`).
    if (old !== ws) {
      this.viewer.newSocket();
      this.audio = "aac";
    }
    if (old && old !== ws) {
      this.deps.metrics.takeovers.inc();
      sendJson(old, {
        type: "error",
        code: "session_already_active",
        fatal: false,
      });
      closeSocket(old, CLOSE_TAKEN_OVER, "taken over by a newer connection");
    }
    ws.binaryType = "arraybuffer";
    const gate = new FrameGate(() => this.deps.now());
    bindSocket(ws, this.deps.log, "media socket", "socket", this.contained, {
      message: (ev) => {
        if (!this.uplink.arrive(ws, gate, ev.data)) return;
        if (this.socket !== ws || this.closed) return;
        return this.uplink.frame(ws, gate, ev.data);
      },
      close: () => {
        if (this.socket === ws) {
          this.socket = null;
          this.sfu?.detach(ws);
          if (!this.sfu || this.fmp4Socket === ws) this.render?.detach();
          this.fmp4Socket = null;
          this.onDetached?.();
        }
      },
      // An error is followed by close, which does the work.
      error: () => {},
    });
    sendJson(ws, { type: "session.state", status });
    this.lastState = status;
    if (this.sfu) {
      // The older socket may have been served fMP4: its stream stops (the run pauses),
      // and its speech, on that stream's timeline, is not replayed.
      const fromFmp4 = this.fmp4Socket !== null;
      if (fromFmp4) this.render?.detach();
      this.fmp4Socket = null;
      this.sfu.attach(ws);
      if (!fromFmp4) this.turns.replaySpeaking();
    } else if (this.render) this.render.attach(this.sinkFor(ws));
  }

  /**
   * Starts streaming once the renderer exists: to the current socket (fMP4), or for a
   * webrtc_sfu session as RTP to its mountpoint, whatever the sockets do.
   */
  startRendering(render: RenderSession): void {
    this.render = render;
    if (this.sfu) {
      const log = this.deps.log;
      // Speech on the sender's clock means nothing to a socket played over MSE.
      const speech = (e: SpeechEvent) => {
        if (!this.fmp4Socket) this.turns.speech(e);
      };
      this.sfu.publish(
        render,
        (why) => this.onFailed?.(why, "render", "render_failed"),
        contain(log, "render", "rtp speech", this.contained, speech),
      );
      if (!this.fmp4Socket) return;
    }
    if (this.socket) render.attach(this.sinkFor(this.socket));
  }

  /** The SFU reports the current socket's viewer receiving media: the stream is up. */
  sfuFlowing(): void {
    this.onInitSent?.();
  }

  /** WebRTC signalling from the current socket: to the SFU side, or refused. */
  private onWebrtc(msg: WebrtcMessage): void {
    if (
      msg.type === "webrtc.unsupported" ||
      (this.sfu && msg.type === "webrtc.answer" && rejectsVideo(msg.sdp))
    ) {
      return this.webrtcUnsupported();
    }
    if (this.sfu && this.socket) void this.sfu.handle(this.socket, msg);
    else this.uplink.invalid();
  }

  /**
   * The current socket's browser cannot play WebRTC (it said so, or its answer rejected
   * the video): created `auto`, the socket is served fMP4 from the same renderer
   * instead; created `webrtc_sfu`, it gets the fatal `unsupported_media` and closes.
   */
  private webrtcUnsupported(): void {
    const ws = this.socket;
    if (!ws || this.fmp4Socket === ws) return;
    if (!this.sfu) return this.uplink.invalid();
    if (!this.fmp4Fallback) {
      this.sendError("unsupported_media", true);
      return closeSocket(ws, CLOSE_UNSUPPORTED_MEDIA, "cannot play WebRTC");
    }
    this.deps.log.info("browser cannot play WebRTC: serving websocket_fmp4", {
      session_id: this.sessionId,
    });
    this.sfu.detach(ws);
    this.fmp4Socket = ws;
    this.render?.attach(this.sinkFor(ws));
  }

  send(msg: ServerMessage): void {
    if (this.socket) sendJson(this.socket, msg);
  }

  sendError(code: SocketErrorCode, fatal: boolean): void {
    this.send({ type: "error", code, fatal });
  }

  /**
   * Graceful or forced teardown of engine and renderer. Resolves with what did not
   * finish in time (empty when all did). The socket stays open for `session.ended`.
   */
  async teardown(force: boolean, timeoutMs: number): Promise<string[]> {
    this.closed = true;
    this.turns.close();
    return await stopPipeline(
      { engine: this.engine, render: this.render, sfu: this.sfu },
      force,
      timeoutMs,
    );
  }

  /** `session.state` for a move the socket has not seen yet (e.g. `ending`), once. */
  sendState(status: string): void {
    if (this.lastState === status) return;
    this.lastState = status;
    this.send({ type: "session.state", status });
  }

  /** Sends `session.ended` (with why, when known) and closes the socket with 1000. */
  finish(status: string, reason?: EndReason): void {
    const ws = this.socket;
    this.socket = null;
    if (!ws) return;
    sendJson(ws, endedMessage(status, reason));
    closeSocket(ws, 1000, "session ended");
  }

  /**
   * Closes the socket with 1001 "going away" and no `session.ended`: the service is
   * shutting down, the session itself did not end (the reaper settles it later).
   */
  goAway(): void {
    const ws = this.socket;
    this.socket = null;
    if (ws) closeSocket(ws, 1001, "service shutting down");
  }

  /** Drops everything at once (failure paths, shutdown). */
  async abort(): Promise<void> {
    this.closed = true;
    this.turns.close();
    this.engine?.close();
    await this.sfu?.close();
    await this.render?.stop({ graceful: false, timeoutMs: 0 }).catch(() =>
      undefined
    );
  }
}
