/**
 * An example conversation engine speaking ECEP v1 (docs/engine-protocol.md) that needs no
 * internet and no models: it echoes the user's speech back as the agent's voice once the
 * user stops talking (energy VAD with hangover), and answers typed text with synthetic
 * formant "babble" whose length follows the reply. No speech recognition is available
 * offline, so the user transcript only says how long the speech was.
 *
 * Barge-in: when the user starts talking over the agent (its VAD; the browser's echo
 * cancellation keeps the agent's own voice out of the microphone), it stops the
 * response and sends `response.cancel`, so the service drops what is queued of it. The
 * `interrupt` the service answers with says how much of the response was streamed
 * (`played_ms`); the engine logs that truncation and keeps it in its history.
 *
 *   deno task example-engine                      # ws://127.0.0.1:8787 (loopback demo)
 *   TLS_CERT=tests/fixtures/tls/localhost.crt TLS_KEY=tests/fixtures/tls/localhost.key \
 *     deno task example-engine                    # wss://localhost:8787
 *
 * Env: PORT (8787), HOSTNAME (127.0.0.1), TLS_CERT/TLS_KEY (PEM files), ENGINE_TOKEN
 * (when set, the upgrade must carry `Authorization: Bearer <token>`).
 */
import { pcmToBytes } from "../lib/providers/resample.ts";
import { babble, replyFor } from "./example_engine_voice.ts";

export { babble, replyFor };

export interface ExampleEngineOptions {
  port?: number;
  hostname?: string;
  /** PEM certificate and key: serve wss:// instead of ws://. */
  cert?: string;
  key?: string;
  /** Required bearer token on the upgrade, when set. */
  token?: string;
  /** Where log lines go (default `console.log`). */
  log?: (line: string) => void;
}

/** A response as the engine's history keeps it: how much was heard when cut. */
export interface Truncation {
  response_id: string;
  played_ms: number;
  /** The response's full length. */
  total_ms: number;
}

export interface ExampleEngine {
  url: string;
  port: number;
  /** Truncations the service reported (`interrupt` with `played_ms`), oldest first. */
  truncations: Truncation[];
  /** Microphone frames (20 ms) heard over all sessions, and how many were loud. */
  mic: MicHeard;
  close(): Promise<void>;
}

/** What the engine heard of the users' microphones. */
export interface MicHeard {
  frames: number;
  /** Frames over the VAD's floor (`MIN_RMS`). */
  loud: number;
}

const FRAME_MS = 20;
const ONSET_FRAMES = 2;
const HANGOVER_FRAMES = 20; // 400 ms of quiet ends an utterance
const PREROLL_FRAMES = 5;
const MIN_SPEECH_FRAMES = 10;
const MIN_RMS = 300;
const CHUNK_MS = 100;
const LEAD_CHUNKS = 2;
const MAX_FRAME_BYTES = 1024;

function rms(x: Int16Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] * x[i];
  return Math.sqrt(s / Math.max(1, x.length));
}

/** One ECEP session: VAD state, the response being played, its pacing timer. */
class EngineSession {
  rate = 24000;
  started = false;
  #pending = new Int16Array(0);
  #noise = MIN_RMS;
  #speechRun = 0;
  #quietRun = 0;
  #inSpeech = false;
  #utterance: Int16Array[] = [];
  #preroll: Int16Array[] = [];
  #responses = 0;
  #playing: { id: string; timer: ReturnType<typeof setInterval> } | null = null;
  /** Full length (ms) of each response started, for truncations (bounded). */
  #lengths = new Map<string, number>();

  constructor(
    readonly socket: WebSocket,
    private readonly onTruncation: (t: Truncation) => void,
    private readonly mic: MicHeard = { frames: 0, loud: 0 },
  ) {}

  send(msg: Record<string, unknown>): void {
    if (this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify(msg));
    }
  }

  sendAudio(pcm: Int16Array): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    const bytes = pcmToBytes(pcm);
    for (let i = 0; i < bytes.length; i += MAX_FRAME_BYTES) {
      this.socket.send(bytes.subarray(i, i + MAX_FRAME_BYTES));
    }
  }

  onText(raw: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(raw);
    } catch {
      this.send({ type: "error", message: "invalid JSON", fatal: false });
      return;
    }
    if (msg.type === "session.start") {
      const r = (msg.user_audio as { sample_rate?: unknown } | undefined)
        ?.sample_rate;
      if (Number.isInteger(r) && (r as number) >= 8000) this.rate = r as number;
      this.started = true;
      this.send({
        type: "session.ready",
        agent_audio: { encoding: "pcm_s16le", sample_rate: this.rate },
      });
    } else if (msg.type === "user.text" && typeof msg.text === "string") {
      const reply = replyFor(msg.text);
      this.respond(babble(reply, this.rate), reply);
    } else if (msg.type === "interrupt") {
      this.stop();
      this.#truncate(msg.response_id, msg.played_ms);
    } else if (msg.type === "session.end") {
      this.stop();
      this.socket.close(1000, "session ended");
    }
  }

  /** Microphone audio: 20-ms frames through the VAD (speech over the agent cuts it). */
  onAudio(bytes: ArrayBuffer): void {
    if (!this.started) return;
    const incoming = new Int16Array(bytes, 0, bytes.byteLength >> 1);
    const joined = new Int16Array(this.#pending.length + incoming.length);
    joined.set(this.#pending);
    joined.set(incoming, this.#pending.length);
    const frame = Math.round((this.rate * FRAME_MS) / 1000);
    let off = 0;
    for (; off + frame <= joined.length; off += frame) {
      this.#vad(joined.slice(off, off + frame));
    }
    this.#pending = joined.slice(off);
  }

  #vad(frame: Int16Array): void {
    const level = rms(frame);
    this.mic.frames++;
    if (level > MIN_RMS) this.mic.loud++;
    const loud = level > Math.max(MIN_RMS, this.#noise * 3);
    if (!this.#inSpeech) {
      // The noise floor follows quiet frames only.
      if (!loud) this.#noise = 0.95 * this.#noise + 0.05 * Math.max(level, 50);
      this.#preroll.push(frame);
      if (this.#preroll.length > PREROLL_FRAMES) this.#preroll.shift();
      this.#speechRun = loud ? this.#speechRun + 1 : 0;
      if (this.#speechRun >= ONSET_FRAMES) {
        // Barge-in: the user talks over the agent, which stops at once.
        if (this.#playing) this.cancel();
        this.#inSpeech = true;
        this.#quietRun = 0;
        this.#utterance = [...this.#preroll];
        this.#preroll = [];
      }
      return;
    }
    this.#utterance.push(frame);
    this.#quietRun = loud ? 0 : this.#quietRun + 1;
    if (this.#quietRun < HANGOVER_FRAMES) return;
    this.#inSpeech = false;
    this.#speechRun = 0;
    // Echo the speech without the trailing quiet of the hangover.
    const voiced = this.#utterance.slice(0, -HANGOVER_FRAMES);
    this.#utterance = [];
    if (voiced.length < MIN_SPEECH_FRAMES) return;
    const total = voiced.reduce((n, f) => n + f.length, 0);
    const pcm = new Int16Array(total);
    let at = 0;
    for (const f of voiced) {
      pcm.set(f, at);
      at += f.length;
    }
    const seconds = (total / this.rate).toFixed(1);
    this.send({
      type: "transcript",
      role: "user",
      text: `(speech, ${seconds} s)`,
      final: true,
    });
    this.respond(pcm, `I heard ${seconds} seconds of speech; here it is back.`);
  }

  /** Plays `pcm` as one response, paced at real time with a small lead. */
  respond(pcm: Int16Array, text: string): void {
    this.stop();
    const id = `resp-${++this.#responses}`;
    this.send({ type: "response.start", response_id: id });
    this.send({ type: "transcript", role: "agent", text, final: true });
    this.#lengths.set(id, Math.round((pcm.length * 1000) / this.rate));
    if (this.#lengths.size > 32) {
      this.#lengths.delete(this.#lengths.keys().next().value!);
    }
    const chunk = Math.round((this.rate * CHUNK_MS) / 1000);
    let at = 0;
    const tick = () => {
      if (this.#playing?.id !== id) return;
      this.sendAudio(pcm.subarray(at, at + chunk));
      at += chunk;
      if (at >= pcm.length) {
        clearInterval(this.#playing.timer);
        this.#playing = null;
        this.send({ type: "response.end", response_id: id });
      }
    };
    this.#playing = { id, timer: setInterval(tick, CHUNK_MS) };
    for (let i = 0; i < LEAD_CHUNKS; i++) tick();
  }

  /** Stops the response being played and tells the service to drop what it queued. */
  cancel(): void {
    const id = this.#playing?.id;
    if (!id) return;
    this.send({ type: "response.cancel", response_id: id });
    this.stop();
  }

  /** The service cut `id` after `played` ms: the history keeps only what was heard. */
  #truncate(id: unknown, played: unknown): void {
    if (typeof id !== "string" || typeof played !== "number") return;
    const total = this.#lengths.get(id);
    if (total === undefined || !(played >= 0)) return;
    this.onTruncation({
      response_id: id,
      played_ms: Math.min(played, total),
      total_ms: total,
    });
  }

  /** Stops the response being played, if any (interrupt, end, close). */
  stop(): void {
    if (!this.#playing) return;
    const { id, timer } = this.#playing;
    clearInterval(timer);
    this.#playing = null;
    this.send({ type: "response.end", response_id: id });
  }
}

/** Starts the example engine; `url` is ws:// or wss:// (with `cert`/`key`). */
export function startExampleEngine(
  options: ExampleEngineOptions = {},
): ExampleEngine {
  const hostname = options.hostname ?? "127.0.0.1";
  const sessions = new Set<EngineSession>();
  const truncations: Truncation[] = [];
  const mic: MicHeard = { frames: 0, loud: 0 };
  const log = options.log ?? ((line: string) => console.log(line));
  const onTruncation = (t: Truncation) => {
    truncations.push(t);
    if (truncations.length > 100) truncations.shift();
    log(
      `truncated ${t.response_id}: the user heard ${t.played_ms} of ${t.total_ms} ms`,
    );
  };
  const handler = (req: Request): Response => {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("example ECEP v1 engine: connect with WebSocket\n", {
        status: 426,
      });
    }
    if (
      options.token &&
      req.headers.get("authorization") !== `Bearer ${options.token}`
    ) {
      return new Response("unauthorized\n", { status: 401 });
    }
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const s = new EngineSession(socket, onTruncation, mic);
    sessions.add(s);
    socket.onmessage = (e) => {
      if (typeof e.data === "string") s.onText(e.data);
      else if (e.data instanceof ArrayBuffer) s.onAudio(e.data);
    };
    socket.onclose = () => {
      s.stop();
      sessions.delete(s);
    };
    socket.onerror = () => {};
    return response;
  };
  const tls = options.cert && options.key
    ? { cert: options.cert, key: options.key }
    : {};
  const server = Deno.serve({
    port: options.port ?? 8787,
    hostname,
    ...tls,
    onListen() {},
  }, handler);
  const port = server.addr.port;
  const host = tls.cert ? "localhost" : hostname;
  return {
    url: `${tls.cert ? "wss" : "ws"}://${host}:${port}/`,
    port,
    truncations,
    mic,
    async close() {
      for (const s of sessions) {
        s.stop();
        if (s.socket.readyState === WebSocket.OPEN) s.socket.close(1001);
      }
      await server.shutdown();
    },
  };
}

if (import.meta.main) {
  const env = Deno.env.toObject();
  const certPath = env.TLS_CERT;
  const keyPath = env.TLS_KEY;
  const engine = startExampleEngine({
    port: Number(env.PORT ?? 8787),
    hostname: env.HOSTNAME ?? "127.0.0.1",
    cert: certPath ? Deno.readTextFileSync(certPath) : undefined,
    key: keyPath ? Deno.readTextFileSync(keyPath) : undefined,
    token: env.ENGINE_TOKEN || undefined,
  });
  console.log(`example engine (ECEP v1) listening on ${engine.url}`);
  Deno.addSignalListener("SIGINT", async () => {
    await engine.close();
    Deno.exit(0);
  });
}
