/**
 * One session of the soak (`bench/soak.ts`) on `websocket_fmp4`, driven the way a user
 * and a browser drive it: typed turns, `interrupt`s and microphone barge-ins over the
 * avatar's speech, client-token refreshes over REST, dropped sockets redialled and
 * takeovers by a second socket. It notes latency and A/V readings per socket and says
 * when (and why) the session was lost: ended by the service, a socket that could not be
 * redialled, or a stream that stopped (no fragment for `FROZEN_MS`).
 */
import { MediaClient, sleep } from "./_media_lib.ts";
import { ENGINE_TOKEN, post, type Service } from "./_media_service.ts";
import { AvTrack } from "./_soak_lib.ts";

/** Every action below is on a one-second tick, offset per session. */
const TURN_EVERY_S = 4;
/** Of the turns: every `INTERRUPT_EVERY`th is cut with `interrupt`, … */
const INTERRUPT_EVERY = 5;
/** … every `BARGE_EVERY`th by the user talking over the avatar (microphone). */
const BARGE_EVERY = 7;
const CUT_AFTER_MS = 1500;
const REFRESH_EVERY_S = 45;
/** A drop at 30 s and a takeover at 90 s of every two minutes. */
const RECONNECT_PERIOD_S = 120;
const FROZEN_MS = 5000;
const READY_MS = 30_000;
/** Fragments of silence (40 ms each) before the next turn is typed. */
const QUIET_BEFORE_TURN = 8;
const LONG_TEXT = "Tell me a long story about the sea, the ships and the " +
  "lighthouse keepers who watched them through the night, please.";
const MIC_RATE = 24000;

/** A loud tone then silence, PCM16LE at 24 kHz: the engine hears an utterance. */
function utterance(): ArrayBuffer {
  const loud = MIC_RATE * 0.3;
  const pcm = new Int16Array(MIC_RATE * 0.8);
  for (let i = 0; i < loud; i++) {
    pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / MIC_RATE));
  }
  return pcm.buffer;
}

export type AvatarKind = "photo" | "cartoon";

/** What one session did and saw since the last `take()`. */
export interface SessionWindow {
  latencies: number[];
  offsetMs: number;
  driftMs: number;
  actions: Record<string, number>;
  problems: string[];
}

/** A soak session; `tick()` once a second until it is lost or the soak ends. */
export class SoakSession {
  id = "";
  lost: string | null = null;
  client: MediaClient | null = null;
  #token = "";
  #av: AvTrack | null = null;
  #ended: string | null = null;
  #t = 0;
  #turns = 0;
  #busy = false;
  #timers = new Set<ReturnType<typeof setTimeout>>();
  #win: SessionWindow = SoakSession.#empty();

  constructor(
    readonly svc: Service,
    readonly engineUrl: string,
    readonly kind: AvatarKind,
    readonly avatarId: string,
    offsetS: number,
  ) {
    this.#t = offsetS;
  }

  static #empty(): SessionWindow {
    return {
      latencies: [],
      offsetMs: 0,
      driftMs: 0,
      actions: {},
      problems: [],
    };
  }

  #count(action: string): void {
    this.#win.actions[action] = (this.#win.actions[action] ?? 0) + 1;
  }

  /** Creates the session over REST and opens its first media socket. */
  async start(): Promise<void> {
    const r = await post(this.svc.base, "/v1/sessions", {
      avatar_config: { avatar_id: this.avatarId },
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: this.engineUrl,
          auth_headers: { authorization: `Bearer ${ENGINE_TOKEN}` },
        },
      },
      transport: "websocket_fmp4",
    });
    if (r.status !== 200) {
      throw new Error(`create answered ${r.status} ${JSON.stringify(r.body)}`);
    }
    this.id = String(r.body.session_id);
    this.#token = String(r.body.client_token);
    await this.#connect();
  }

  /** Opens a socket with the latest token; it becomes the session's client once ready. */
  async #connect(): Promise<void> {
    const ws = new WebSocket(
      `${this.svc.base.replace("http", "ws")}/v1/sessions/${
        encodeURIComponent(this.id)
      }/ws?token=${encodeURIComponent(this.#token)}`,
    );
    const c = new MediaClient(ws);
    const av = new AvTrack(ws);
    ws.addEventListener("message", (e) => {
      if (typeof e.data !== "string") return;
      if (e.data.includes('"session.ended"')) {
        this.#ended = String(JSON.parse(e.data).reason ?? "unknown");
      } else if (e.data.includes('"turn.interrupted"')) {
        this.#count("cut_seen");
      }
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        c.ready,
        new Promise((_, rej) => {
          timer = setTimeout(
            () => rej(new Error("not active within 30 s")),
            READY_MS,
          );
        }),
      ]);
    } catch (e) {
      ws.close();
      throw e;
    } finally {
      clearTimeout(timer);
    }
    if (this.client) this.#drain(this.client);
    this.client = c;
    this.#av = av;
  }

  #drain(c: MediaClient): void {
    this.#win.latencies.push(...c.latencies);
    c.latencies.length = 0;
    if (this.#av) {
      const r = this.#av.take();
      this.#win.offsetMs = Math.max(this.#win.offsetMs, r.offsetMs);
      this.#win.driftMs = Math.max(this.#win.driftMs, r.driftMs);
    }
  }

  #later(ms: number, f: () => void): void {
    const id = setTimeout(() => (this.#timers.delete(id), f()), ms);
    this.#timers.add(id);
  }

  /** One second of the session's life: the due action, then the loss checks. */
  async tick(): Promise<void> {
    if (this.lost || this.#busy) return;
    this.#busy = true;
    try {
      const t = this.#t++;
      const c = this.client!;
      if (this.#ended) return this.#lose(`ended: ${this.#ended}`);
      if (c.closeCode !== null) {
        // Not one we closed or took over: a browser redials.
        this.#win.problems.push(`${this.id}: socket closed ${c.closeCode}`);
        return await this.#redial("redial");
      }
      const silentMs = performance.now() - c.lastArrival;
      if (c.lastArrival && silentMs > FROZEN_MS) {
        return this.#lose(`frozen: no fragment for ${Math.round(silentMs)} ms`);
      }
      if (t % RECONNECT_PERIOD_S === 30) {
        c.ws.close(1000);
        await sleep(300);
        return await this.#redial("drop");
      }
      if (t % RECONNECT_PERIOD_S === 90) return await this.#takeover();
      if (t % REFRESH_EVERY_S === 10) return await this.#refresh();
      if (t % TURN_EVERY_S === 0) this.#turn(c);
    } finally {
      this.#busy = false;
    }
  }

  #turn(c: MediaClient): void {
    if (c.pendingSince !== null) {
      if (performance.now() - c.pendingSince < 5000) return;
      this.#win.problems.push(`${this.id}: a response never played`);
      c.pendingSince = null;
    }
    if (c.quietRun < QUIET_BEFORE_TURN) return;
    const n = ++this.#turns;
    const cut = n % INTERRUPT_EVERY === 0
      ? "interrupt"
      : n % BARGE_EVERY === 0
      ? "barge_in"
      : null;
    c.ws.send(
      JSON.stringify({ type: "text", text: cut ? LONG_TEXT : "hello there" }),
    );
    this.#count("turn");
    if (!cut) return;
    this.#later(CUT_AFTER_MS, () => {
      if (
        this.lost || c !== this.client || c.ws.readyState !== WebSocket.OPEN
      ) {
        return;
      }
      if (cut === "interrupt") c.ws.send(JSON.stringify({ type: "interrupt" }));
      else c.ws.send(utterance());
      this.#count(cut);
    });
  }

  async #refresh(): Promise<void> {
    const r = await post(
      this.svc.base,
      `/v1/sessions/${encodeURIComponent(this.id)}/client-token`,
    ).catch((e) => ({ status: 0, body: { error: String(e) } }));
    if (r.status === 200 && typeof r.body.client_token === "string") {
      this.#token = r.body.client_token;
      this.#count("refresh");
    } else {
      this.#win.problems.push(`${this.id}: client-token answered ${r.status}`);
    }
  }

  async #redial(action: string): Promise<void> {
    try {
      await this.#connect();
      this.#count(action);
    } catch (e) {
      await this.#lose(`${action} failed: ${(e as Error).message}`);
    }
  }

  /** A second socket takes the session over; the first must close with 4000. */
  async #takeover(): Promise<void> {
    const old = this.client!;
    await this.#redial("takeover");
    if (this.lost) return;
    for (let i = 0; i < 50 && old.closeCode === null; i++) await sleep(100);
    if (old.closeCode !== 4000) {
      this.#win.problems.push(
        `${this.id}: the taken-over socket closed ${old.closeCode} (not 4000)`,
      );
    }
  }

  async #lose(reason: string): Promise<void> {
    this.lost = reason;
    await this.end();
  }

  /** This window's readings and actions, reset. */
  take(): SessionWindow {
    if (this.client) this.#drain(this.client);
    const w = this.#win;
    this.#win = SoakSession.#empty();
    return w;
  }

  /** Ends the session over REST and closes its socket. */
  async end(): Promise<void> {
    for (const id of this.#timers) clearTimeout(id);
    this.#timers.clear();
    if (this.id) {
      await post(this.svc.base, `/v1/sessions/${this.id}/end`).catch(() => {});
    }
    const c = this.client;
    // The service closes the socket after `session.ended`; a stuck one is closed here.
    for (let i = 0; c && i < 30 && c.closeCode === null; i++) await sleep(100);
    if (c && c.closeCode === null) c.ws.close();
  }
}
