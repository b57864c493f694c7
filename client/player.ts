/**
 * The browser player (`AvatarPlayer`, published from ./browser.ts): connects the media socket
 * (docs/media-protocol.md), plays the avatar (client/playback.ts: the fMP4 stream of
 * `websocket_fmp4` sessions decoded with WebCodecs onto a canvas, or over MSE in the
 * `<video>`; WebRTC from the SFU for `webrtc_sfu` ones, signalling on the same socket),
 * turns the socket's turn messages into events (client/turns.ts) and its transcripts
 * into captions when heard (client/captions.ts), sends the microphone as PCM16LE frames, and
 * reconnects after network loss or a sleeping tab by taking the session over with a
 * fresh token.
 */
import { errorText } from "./errors.ts";
import { MicUplink } from "./mic_uplink.ts";
import { type PlayerConfig, playerConfig } from "./player_options.ts";
import { Redial } from "./redial.ts";
import { ViewerReport } from "./viewer_report.ts";
import { openMediaSocket } from "./socket.ts";
import { routeServerText } from "./server_text.ts";
import { Playback } from "./playback.ts";
import { TurnEvents } from "./turns.ts";
import type {
  AvatarPlayerEventMap,
  AvatarPlayerOptions,
  PlayerState,
  PlayerStats,
} from "./player_types.ts";
import {
  CLOSE_TAKEN_OVER,
  Keepalive,
  mediaSocketUrl,
  MediaToken,
} from "./protocol.ts";

const TICK_MS = 250;
/** How long `ended` waits for the `session.ended` that follows `invalid_session`. */
const ENDED_WAIT_MS = 2_000;

/** One browser's live connection to one avatar session. */
export class AvatarPlayer extends EventTarget {
  state: PlayerState = "idle";
  status: string | null = null;
  readonly #o: PlayerConfig;
  /** The `<video>`: MSE or WebRTC, the speaking schedule, autoplay. */
  readonly #media: Playback;
  readonly #token: MediaToken;
  #ws: WebSocket | null = null;
  #closing = false;
  #wasTakenOver = false;
  /** A reconnect is in flight (refresh + dial); wake-ups must not start another. */
  #dialing = false;
  #done = false;
  readonly #redial: Redial;
  readonly #report = new ViewerReport();
  #tick: ReturnType<typeof setInterval> | undefined;
  #keepalive = new Keepalive(() => this.#o.now());
  #mic = new MicUplink(() => this.#ws, (err) =>
    this.#emit("error", {
      code: "microphone_unavailable",
      fatal: false,
      message: errorText(err),
    }));
  readonly #turns = new TurnEvents((type, detail) => this.#emit(type, detail));
  /** `invalid_session` came: `ended` waits (briefly) for its status and reason. */
  #endWait: ReturnType<typeof setTimeout> | undefined;

  constructor(options: AvatarPlayerOptions) {
    super();
    this.#o = playerConfig(options);
    this.#redial = new Redial(this.#o.maxReconnectAttempts);
    this.#token = new MediaToken(
      options.token,
      options.expiresAt,
      () => this.#o.now(),
      () => this.#o.refreshToken(),
    );
    this.#media = new Playback({
      video: options.video,
      transport: options.transport,
      iceServers: options.iceServers,
      maxLatencyS: this.#o.maxLatencyS,
      decoder: this.#o.decoder,
      canvas: options.canvas,
      audioWorkletUrl: options.audioWorkletUrl,
      send: (msg) => {
        if (this.#ws?.readyState === WebSocket.OPEN) {
          this.#ws.send(JSON.stringify(msg));
        }
      },
      onError: (code, message) =>
        this.#emit("error", { code, fatal: false, message }),
      onAutoplayBlocked: () =>
        this.#emit("error", { code: "autoplay_blocked", fatal: false }),
      onPlaying: () => this.#redial.playing(),
      onShown: () => this.#report.shown(),
      // A new socket takes the session over and gets a fresh offer.
      onFailed: () => this.#dropSocket(),
      onSpeaking: (d) => this.#emit("speaking", d),
      onCaption: (d) => this.#emit("caption", d),
    });
  }

  /** The current socket, for diagnostics and tests. */
  get _ws(): WebSocket | null {
    return this.#ws;
  }

  get muted(): boolean {
    return this.#mic.muted;
  }

  /** Whether the avatar is audibly speaking at the video's current time. */
  get speaking(): boolean {
    return this.#media.speaking;
  }

  get stats(): PlayerStats {
    return {
      ...this.#media.bufferStats,
      micFramesSent: this.#mic.framesSent,
      reconnects: this.#redial.total,
      rtc: this.#media.rtcStats,
      decoder: this.#media.decoder,
      webcodecs: this.#media.webCodecsStats,
    };
  }

  /** Adds a typed listener; returns a function that removes it. */
  on<K extends keyof AvatarPlayerEventMap>(
    type: K,
    listener: (detail: AvatarPlayerEventMap[K]) => void,
  ): () => void {
    const fn = (e: Event) => listener((e as CustomEvent).detail);
    this.addEventListener(type, fn);
    return () => this.removeEventListener(type, fn);
  }

  /**
   * Opens the socket (refreshing an expired token first; after a close before open —
   * which is how a browser sees a 401 — one refresh and one retry) and starts the
   * microphone. Rejects when the socket cannot be opened.
   */
  async connect(): Promise<void> {
    if (this.state !== "idle") throw new Error("connect() was already called");
    this.#setState("connecting");
    addEventListener("online", this.#onWake);
    document.addEventListener("visibilitychange", this.#onWake);
    this.#tick = setInterval(() => this.#onTick(), TICK_MS);
    try {
      await this.#open(this.#token.expired());
    } catch (err) {
      this.#emit("error", {
        code: "connect_failed",
        fatal: true,
        message: errorText(err),
      });
      this.close();
      throw err;
    }
    if (this.#o.microphone) {
      void this.#mic.start({
        sampleRate: this.#o.micSampleRate,
        frameMs: this.#o.frameMs,
        workletUrl: this.#o.workletUrl,
      });
    }
  }

  /** Sends a typed user turn (1..4000 characters). Throws when the socket is not open. */
  sendText(value: string): void {
    if (value.length < 1 || value.length > 4000) {
      throw new RangeError("text must be 1 to 4000 characters");
    }
    this.#sendJson({ type: "text", text: value });
  }

  /** Cuts the avatar off mid-answer. Throws when the socket is not open. */
  interrupt(): void {
    this.#sendJson({ type: "interrupt" });
  }

  /** Stops sending microphone audio (the capture keeps running, silent). */
  mute(): void {
    this.#mic.mute();
  }

  unmute(): void {
    this.#mic.unmute();
  }

  /** Starts playback after a user gesture when autoplay was blocked. */
  play(): Promise<void> {
    return this.#media.play();
  }

  /** Closes the socket, stops the microphone and releases the video. Idempotent. */
  close(): void {
    if (this.#done) return;
    this.#done = true;
    this.#closing = true;
    // A session refused as over and no `session.ended` came: it ended, reason unknown.
    if (this.#endWait !== undefined) this.#finish(null, null);
    this.#redial.cancel();
    clearInterval(this.#tick);
    this.#sendReport();
    removeEventListener("online", this.#onWake);
    document.removeEventListener("visibilitychange", this.#onWake);
    this.#ws?.close(1000);
    this.#ws = null;
    this.#mic.stop();
    this.#media.close();
    if (this.state !== "ended") this.#setState("closed");
  }

  #emit<K extends keyof AvatarPlayerEventMap>(
    type: K,
    detail: AvatarPlayerEventMap[K],
  ): void {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  #setState(state: PlayerState): void {
    this.state = state;
    this.#emit("state", { state, status: this.status });
  }

  /** One connect: refresh first when asked; on a close before open, one refresh + retry. */
  async #open(refreshFirst: boolean): Promise<void> {
    if (refreshFirst) await this.#token.refresh();
    try {
      await this.#dial();
    } catch (err) {
      if (refreshFirst || this.#closing) throw err;
      await this.#token.refresh();
      await this.#dial();
    }
  }

  #dial(): Promise<void> {
    return openMediaSocket(mediaSocketUrl(this.#o, this.#token.value), {
      open: (ws) => {
        if (this.#closing) return false;
        this.#ws?.close(1000);
        this.#ws = ws;
        this.#keepalive.opened();
        this.#report.opened();
        this.#setState("open");
        this.#media.socketOpened();
        this.#mic.sendConfig();
        return true;
      },
      text: (ws, data) => ws === this.#ws && this.#onText(data),
      binary: (ws, data) => ws === this.#ws && this.#media.segment(data),
      closed: (ws, code) => {
        if (ws !== this.#ws) return;
        if (code === CLOSE_TAKEN_OVER) this.#takenOver();
        this.#onClosed(code);
      },
    });
  }

  #onText(data: string): void {
    routeServerText(data, {
      state: (status) => {
        this.status = status;
        this.#emit("state", { state: this.state, status });
      },
      takenOver: () => this.#takenOver(),
      error: (code, fatal, stop) => {
        if (stop) this.#closing = true;
        this.#emit("error", { code, fatal });
      },
      // Its status and reason follow in `session.ended`, when the server knows them.
      endedSoon: () =>
        this.#endWait ??= setTimeout(
          () => this.#finish(null, null),
          ENDED_WAIT_MS,
        ),
      ended: (status, reason) => {
        this.#closing = true;
        this.status = status;
        this.#finish(status, reason);
      },
      pong: () => this.#keepalive.ponged(),
      // A transcript is a `transcript` event now and a `caption` when heard.
      other: (msg) => (this.#turns.handle(msg), this.#media.handle(msg)),
    });
  }

  /**
   * Another socket took the session over (`session_already_active`, or the close code
   * 4000 when that message did not arrive — a socket too slow to read gets only the
   * close): said once, and this player does not redial (it would take the session back).
   */
  #takenOver(): void {
    if (this.#wasTakenOver) return;
    this.#wasTakenOver = true;
    this.#closing = true;
    this.#emit("error", { code: "session_already_active", fatal: false });
  }

  #finish(status: string | null, reason: string | null): void {
    clearTimeout(this.#endWait);
    this.#endWait = undefined;
    if (this.state === "ended") return;
    this.#setState("ended");
    this.#emit("ended", { status, reason });
  }

  #onClosed(code: number): void {
    this.#ws = null;
    if (this.#closing || !this.#o.reconnect) {
      this.close();
      return;
    }
    this.#scheduleReconnect(code === 1006 ? 0 : 250);
  }

  #scheduleReconnect(delayMs: number): void {
    if (this.#closing) return;
    if (!this.#redial.schedule(delayMs, () => void this.#reconnect())) {
      this.#emit("error", { code: "reconnect_failed", fatal: true });
      this.close();
      return;
    }
    if (this.state !== "reconnecting") this.#setState("reconnecting");
  }

  /** Takes the session over on a new socket with a fresh token (its own init segment). */
  async #reconnect(): Promise<void> {
    if (this.#closing || this.#ws || this.#dialing) return;
    this.#dialing = true;
    this.#redial.begin();
    try {
      await this.#open(true);
      this.#mic.resume();
    } catch {
      this.#scheduleReconnect(this.#redial.backoffMs());
    } finally {
      this.#dialing = false;
    }
  }

  /** Network back or tab visible again: reconnect now, or check the socket is alive. */
  #onWake = (): void => {
    if (this.#closing || document.visibilityState === "hidden") return;
    if (this.state === "reconnecting" && !this.#ws) {
      this.#scheduleReconnect(0);
    } else if (this.#ws) {
      this.#ping();
    }
  };

  #ping(): void {
    if (this.#ws?.readyState !== WebSocket.OPEN) return;
    this.#keepalive.pinged();
    this.#ws.send('{"type":"ping"}');
  }

  #onTick(): void {
    this.#media.tick(this.state === "open");
    if (this.#report.due()) this.#sendReport();
    const due = this.#keepalive.check(this.#ws !== null);
    if (due === "dead" && this.#ws) {
      // No pong: the socket is dead without knowing it (slept tab, dropped network).
      this.#dropSocket();
    } else if (due === "ping") {
      this.#ping();
    }
  }

  /** Gives up on the current socket and reconnects (a takeover with a fresh token). */
  #dropSocket(): void {
    const stale = this.#ws;
    if (!stale) return;
    this.#ws = null;
    stale.close(4002);
    this.#onClosed(1006);
  }

  /** What this viewer experienced so far, to the service (client/viewer_report.ts). */
  #sendReport(): void {
    if (this.#ws?.readyState !== WebSocket.OPEN) return;
    this.#ws.send(JSON.stringify(this.#report.message(this.stats)));
  }

  #sendJson(msg: Record<string, unknown>): void {
    if (this.#ws?.readyState !== WebSocket.OPEN) {
      throw new Error("The media socket is not open");
    }
    this.#ws.send(JSON.stringify(msg));
  }
}
