/**
 * Browser client of the live avatar service: connects the media socket
 * (docs/media-protocol.md), plays the avatar's fMP4 stream in a `<video>`, sends the
 * microphone as PCM16LE frames, and reconnects after network loss or a sleeping tab by
 * taking the session over with a fresh token.
 *
 * Bundle for a page: `deno bundle --platform browser -o avatar.js client/browser.ts`.
 */
import { Microphone } from "./mic.ts";
import { LiveBuffer } from "./mse.ts";
import type {
  AvatarPlayerEventMap,
  AvatarPlayerOptions,
  PlayerState,
  PlayerStats,
} from "./player_types.ts";

export { LiveBuffer } from "./mse.ts";
export { PCM_WORKLET_SOURCE } from "./pcm-worklet.ts";
export type * from "./player_types.ts";

const TOKEN_MARGIN_MS = 10_000;
const TICK_MS = 250;
const PING_EVERY_MS = 15_000;
const PONG_WITHIN_MS = 10_000;
const MAX_MIC_BUFFERED = 256 * 1024;

/** One browser's live connection to one avatar session. */
export class AvatarPlayer extends EventTarget {
  state: PlayerState = "idle";
  status: string | null = null;
  readonly #o:
    & Required<Omit<AvatarPlayerOptions, "expiresAt" | "workletUrl">>
    & Pick<AvatarPlayerOptions, "expiresAt" | "workletUrl">;
  readonly #buffer: LiveBuffer;
  #token: string;
  #expiresAt: number | undefined;
  #ws: WebSocket | null = null;
  #closing = false;
  /** A reconnect is in flight (refresh + dial); wake-ups must not start another. */
  #dialing = false;
  #done = false;
  #attempts = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #tick: ReturnType<typeof setInterval> | undefined;
  #lastPing = 0;
  #pongDeadline = 0;
  #muted = false;
  #autoplayBlocked = false;
  #mic: Microphone | null = null;
  #turnRoles = new Map<string, "user" | "avatar">();
  #counters = { micFramesSent: 0, reconnects: 0 };

  constructor(options: AvatarPlayerOptions) {
    super();
    this.#o = {
      microphone: true,
      micSampleRate: 24000,
      frameMs: 20,
      reconnect: true,
      maxReconnectAttempts: 8,
      maxLatencyS: 1,
      now: Date.now,
      ...options,
    };
    this.#token = options.token;
    this.#expiresAt = options.expiresAt;
    this.#buffer = new LiveBuffer(options.video, {
      maxLatencyS: this.#o.maxLatencyS,
      onError: (code, message) =>
        this.#emit("error", { code, fatal: false, message }),
    });
  }

  /** The current socket, for diagnostics and tests. */
  get _ws(): WebSocket | null {
    return this.#ws;
  }

  get muted(): boolean {
    return this.#muted;
  }

  get stats(): PlayerStats {
    return { ...this.#buffer.stats, ...this.#counters };
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
      await this.#open(this.#tokenExpired());
    } catch (err) {
      this.#emit("error", {
        code: "connect_failed",
        fatal: true,
        message: text(err),
      });
      this.close();
      throw err;
    }
    if (this.#o.microphone) void this.#startMic();
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
    this.#muted = true;
    if (this.#mic) this.#mic.enabled = false;
  }

  unmute(): void {
    this.#muted = false;
    if (this.#mic) this.#mic.enabled = true;
  }

  /** Starts playback after a user gesture when autoplay was blocked. */
  play(): Promise<void> {
    this.#autoplayBlocked = false;
    return this.#o.video.play();
  }

  /** Closes the socket, stops the microphone and releases the video. Idempotent. */
  close(): void {
    if (this.#done) return;
    this.#done = true;
    this.#closing = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#tick);
    removeEventListener("online", this.#onWake);
    document.removeEventListener("visibilitychange", this.#onWake);
    this.#ws?.close(1000);
    this.#ws = null;
    this.#mic?.stop();
    this.#mic = null;
    this.#buffer.close();
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

  #tokenExpired(): boolean {
    return this.#expiresAt !== undefined &&
      this.#expiresAt - this.#o.now() < TOKEN_MARGIN_MS;
  }

  async #refresh(): Promise<void> {
    const fresh = await this.#o.refreshToken();
    this.#token = fresh.client_token;
    this.#expiresAt = fresh.expires_at;
  }

  /** One connect: refresh first when asked; on a close before open, one refresh + retry. */
  async #open(refreshFirst: boolean): Promise<void> {
    if (refreshFirst) await this.#refresh();
    try {
      await this.#dial();
    } catch (err) {
      if (refreshFirst || this.#closing) throw err;
      await this.#refresh();
      await this.#dial();
    }
  }

  #dial(): Promise<void> {
    const base = this.#o.wsBaseUrl.replace(/\/+$/, "");
    const url = `${base}/v1/sessions/${encodeURIComponent(this.#o.sessionId)}` +
      `/ws?token=${encodeURIComponent(this.#token)}`;
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.binaryType = "arraybuffer";
      let opened = false;
      ws.onopen = () => {
        if (this.#closing) return ws.close(1000);
        opened = true;
        this.#ws?.close(1000);
        this.#ws = ws;
        this.#pongDeadline = 0;
        this.#lastPing = this.#o.now();
        this.#setState("open");
        this.#sendAudioConfig();
        resolve();
      };
      ws.onmessage = (e) => {
        if (ws !== this.#ws) return;
        if (typeof e.data === "string") this.#onText(e.data);
        else this.#buffer.append(e.data as ArrayBuffer);
      };
      ws.onclose = (e) => {
        if (!opened) {
          reject(
            new Error(`The media socket closed before it opened (${e.code})`),
          );
        } else if (ws === this.#ws) {
          this.#onClosed(e.code);
        }
      };
    });
  }

  #onText(data: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    switch (msg.type) {
      case "session.state":
        this.status = String(msg.status);
        this.#emit("state", { state: this.state, status: this.status });
        break;
      case "media.init":
        // A stream is flowing: the connection is healthy again.
        this.#attempts = 0;
        this.#buffer.reset(String(msg.mime));
        break;
      case "turn.start": {
        const role = msg.role === "user" ? "user" : "avatar";
        this.#turnRoles.set(String(msg.turn_id), role);
        this.#emit("turn", {
          phase: "start",
          turn_id: String(msg.turn_id),
          role,
        });
        break;
      }
      case "turn.end": {
        const id = String(msg.turn_id);
        const role = this.#turnRoles.get(id) ?? null;
        this.#turnRoles.delete(id);
        this.#emit("turn", { phase: "end", turn_id: id, role });
        break;
      }
      case "transcript":
        this.#emit("transcript", {
          turn_id: String(msg.turn_id),
          role: msg.role === "user" ? "user" : "avatar",
          text: String(msg.text),
          final: msg.final === true,
        });
        break;
      case "error":
        if (
          msg.code === "invalid_session" ||
          msg.code === "session_already_active"
        ) {
          // The session is over, or another socket has it: do not reconnect.
          this.#closing = true;
        }
        this.#emit("error", {
          code: String(msg.code),
          fatal: msg.fatal === true,
        });
        if (msg.code === "invalid_session") this.#finish(null);
        break;
      case "session.ended":
        this.#closing = true;
        this.status = String(msg.status);
        this.#finish(this.status);
        break;
      case "pong":
        this.#pongDeadline = 0;
        break;
    }
  }

  #finish(status: string | null): void {
    if (this.state === "ended") return;
    this.#setState("ended");
    this.#emit("ended", { status });
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
    clearTimeout(this.#retryTimer);
    if (this.#attempts >= this.#o.maxReconnectAttempts) {
      this.#emit("error", { code: "reconnect_failed", fatal: true });
      this.close();
      return;
    }
    if (this.state !== "reconnecting") this.#setState("reconnecting");
    this.#retryTimer = setTimeout(() => void this.#reconnect(), delayMs);
  }

  /** Takes the session over on a new socket with a fresh token (its own init segment). */
  async #reconnect(): Promise<void> {
    if (this.#closing || this.#ws || this.#dialing) return;
    this.#dialing = true;
    this.#attempts++;
    this.#counters.reconnects++;
    try {
      await this.#open(true);
      this.#mic?.resume();
    } catch {
      const backoff = Math.min(30_000, 500 * 2 ** this.#attempts);
      this.#scheduleReconnect(backoff * (0.8 + 0.4 * Math.random()));
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
    this.#lastPing = this.#o.now();
    if (!this.#pongDeadline) {
      this.#pongDeadline = this.#lastPing + PONG_WITHIN_MS;
    }
    this.#ws.send('{"type":"ping"}');
  }

  #onTick(): void {
    this.#buffer.tick();
    const v = this.#o.video;
    if (
      v.paused && !this.#autoplayBlocked && this.state === "open" &&
      this.#buffer.latencyS > 0
    ) {
      v.play().catch((err) => {
        if (err instanceof DOMException && err.name === "NotAllowedError") {
          if (this.#autoplayBlocked) return;
          this.#autoplayBlocked = true;
          this.#emit("error", { code: "autoplay_blocked", fatal: false });
        }
      });
    }
    const now = this.#o.now();
    if (this.#ws && this.#pongDeadline && now > this.#pongDeadline) {
      // No pong: the socket is dead without knowing it (slept tab, dropped network).
      const stale = this.#ws;
      this.#ws = null;
      stale.close(4002);
      this.#onClosed(1006);
    } else if (now - this.#lastPing >= PING_EVERY_MS) {
      this.#ping();
    }
  }

  #sendJson(msg: Record<string, unknown>): void {
    if (this.#ws?.readyState !== WebSocket.OPEN) {
      throw new Error("The media socket is not open");
    }
    this.#ws.send(JSON.stringify(msg));
  }

  #sendAudioConfig(): void {
    if (this.#mic && this.#ws?.readyState === WebSocket.OPEN) {
      this.#ws.send(
        JSON.stringify({
          type: "audio.config",
          sample_rate: this.#mic.sampleRate,
        }),
      );
    }
  }

  async #startMic(): Promise<void> {
    try {
      const mic = await Microphone.start(
        {
          sampleRate: this.#o.micSampleRate,
          frameMs: this.#o.frameMs,
          workletUrl: this.#o.workletUrl,
        },
        (frames) => this.#sendMic(frames),
      );
      if (this.#done) return mic.stop();
      this.#mic = mic;
      mic.enabled = !this.#muted;
      this.#sendAudioConfig();
    } catch (err) {
      this.#emit("error", {
        code: "microphone_unavailable",
        fatal: false,
        message: text(err),
      });
    }
  }

  #sendMic(frames: Uint8Array[]): void {
    const ws = this.#ws;
    if (this.#muted || ws?.readyState !== WebSocket.OPEN) return;
    for (const f of frames) {
      // Real-time audio: drop rather than queue behind a stalled connection.
      if (ws.bufferedAmount > MAX_MIC_BUFFERED) return;
      ws.send(f);
      this.#counters.micFramesSent++;
    }
  }
}

/** Creates an `AvatarPlayer` and connects it. */
export async function connectAvatar(
  options: AvatarPlayerOptions,
): Promise<AvatarPlayer> {
  const player = new AvatarPlayer(options);
  await player.connect();
  return player;
}

function text(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
