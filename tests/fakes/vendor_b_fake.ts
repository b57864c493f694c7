/**
 * A fake Cartesia agents WebSocket (vendor_b) on real wss, behaving as the vendor's
 * reference says (https://docs.cartesia.ai/line/integrations/web-calls):
 * - `POST /access-token` (Authorization: Bearer <API key>) mints a token; only one
 *   minted with `grants.agent` (or given in `tokens`) opens the agents socket.
 * - The socket is `/agents/stream/{agent_id}`; the upgrade needs that bearer token and
 *   `Cartesia-Version: 2025-04-16`, and a known agent id (else 401 / 400 / 404).
 * - The first message must be `start`; anything else closes the connection (1008).
 *   `start` is answered by `ack` (the stream id and input format).
 * - User audio (`media_input`, base64 PCM16LE at the input format) is counted and
 *   listened to: speech then 300 ms of silence gets a reply of `replyMs` audio, streamed
 *   as `media_output` `speedup` times faster than real time; speech while the agent's
 *   audio would still be playing gets `clear` (its barge-in) and stops the reply.
 * - A connection without any client message for `idleMs` (30 s by default) is closed
 *   with 1000 "connection idle timeout"; `endCall()` closes 1000 "call ended by agent".
 *
 * Messages are typed: the token call with `@cartesia/cartesia-js`'s own types; the socket
 * events, which that SDK does not type, with the local types below (from the reference
 * page above), so a drift of either shape fails `deno check`.
 */
import type { Cartesia } from "@cartesia/cartesia-js";
import { base64ToPcm, pcmToBase64 } from "../../lib/providers/resample.ts";
import { type FakePeer, type FakeWs, type Json, Waiter } from "./fake_ws.ts";
import { startWssServer } from "./wss_server.ts";

/** The `Cartesia-Version` the reference names for the agents WebSocket. */
export const CARTESIA_AGENTS_VERSION = "2025-04-16";

// The agents WebSocket's events (https://docs.cartesia.ai/line/integrations/web-calls,
// "Input Events" and "Output Events"); @cartesia/cartesia-js 4.2.0 has no types for them.
type InputFormat = "mulaw_8000" | "pcm_16000" | "pcm_24000" | "pcm_44100";
interface StartEvent {
  event: "start";
  stream_id?: string;
  config?: { input_format?: InputFormat; voice_id?: string };
  metadata?: Record<string, unknown>;
}
interface MediaEvent<E extends "media_input" | "media_output"> {
  event: E;
  stream_id: string;
  media: { payload: string };
}
interface DtmfEvent {
  event: "dtmf";
  stream_id: string;
  dtmf: string;
}
interface CustomEvent {
  event: "custom";
  stream_id: string;
  metadata: Record<string, unknown>;
}
interface AckEvent {
  event: "ack";
  stream_id: string;
  config: { input_format: InputFormat };
}
interface ClearEvent {
  event: "clear";
  stream_id: string;
}
type ClientEvent =
  | StartEvent
  | MediaEvent<"media_input">
  | DtmfEvent
  | CustomEvent;
type ServerEvent =
  | AckEvent
  | MediaEvent<"media_output">
  | ClearEvent
  | DtmfEvent
  | CustomEvent;

const FORMATS: Record<InputFormat, number | null> = {
  mulaw_8000: null,
  pcm_16000: 16000,
  pcm_24000: 24000,
  pcm_44100: 44100,
};

export interface VendorBFakeOptions {
  /** The API key `POST /access-token` takes. */
  apiKey?: string;
  /** Tokens accepted as if minted with the agent grant. */
  tokens?: string[];
  /** Agent ids that exist. */
  agents?: string[];
  /** Closes a connection without client messages this long (ms); 30 s by default. */
  idleMs?: number;
  /** Milliseconds of audio in each reply. */
  replyMs?: number;
  /** How much faster than real time audio is streamed. */
  speedup?: number;
  /** False: `start` is never answered (an agent that does not come up). */
  ack?: boolean;
  /** The format the `ack` confirms, when not the one asked for. */
  ackFormat?: InputFormat;
}

export interface VendorBFake extends FakeWs {
  /** Access tokens minted with the agent grant. */
  minted: Set<string>;
  /** PCM16 samples of user audio received over all connections. */
  userSamples(): number;
  /** Connections closed for inactivity. */
  idleCloses(): number;
  /** When each client message of the first connection arrived (`performance.now()`). */
  arrivals(): number[];
  /** Streams `ms` of agent audio on the first connection (faster than real time). */
  say(ms: number): void;
  /** Whether the first connection is still sending agent audio. */
  streaming(): boolean;
  /** Sends `clear` on the first connection. */
  clear(): void;
  /** Sends a server `dtmf` and a `custom` event on the first connection. */
  extras(): void;
  /** The agent ends the call: close 1000 "call ended by agent". */
  endCall(): void;
}

interface Conn {
  peer: FakePeer;
  stream: string;
  rate: number;
  started: boolean;
  idle?: ReturnType<typeof setTimeout>;
  reply?: ReturnType<typeof setTimeout>;
  /** When the agent's audio sent so far would finish playing (epoch ms). */
  playingUntil: number;
  voicedSamples: number;
  quietSamples: number;
  /** When each client message arrived (`performance.now()`). */
  arrivals: number[];
}

/** Starts the fake; point `VENDOR_B_URL` (or `vendorBUrl`) at `.url`. */
export function startVendorBFake(
  options: VendorBFakeOptions = {},
): VendorBFake {
  const idleMs = options.idleMs ?? 30_000;
  const replyMs = options.replyMs ?? 1000;
  const speedup = options.speedup ?? 10;
  const agents = new Set(options.agents ?? ["agent-b"]);
  const minted = new Set<string>(options.tokens ?? []);
  const conns: Conn[] = [];
  const peers: FakePeer[] = [];
  const sockets = new Set<WebSocket>();
  const waiter = new Waiter();
  let userSamples = 0;
  let idleCloses = 0;

  const emit = (c: Conn, e: ServerEvent) => c.peer.send(e as unknown as Json);

  const stopReply = (c: Conn) => {
    clearTimeout(c.reply);
    c.reply = undefined;
  };

  /** Streams `ms` of a tone in 100-ms media_output events, `speedup`× real time. */
  const speak = (c: Conn, ms: number) => {
    stopReply(c);
    const chunk = c.rate / 10;
    let left = Math.round(ms / 100);
    c.playingUntil = Math.max(c.playingUntil, Date.now()) + ms;
    const next = () => {
      if (left-- <= 0 || c.peer.closed) return stopReply(c);
      const pcm = new Int16Array(chunk);
      for (let i = 0; i < chunk; i++) {
        pcm[i] = Math.round(6000 * Math.sin(2 * Math.PI * 220 * i / c.rate));
      }
      emit(c, {
        event: "media_output",
        stream_id: c.stream,
        media: { payload: pcmToBase64(pcm) },
      });
      c.reply = setTimeout(next, 100 / speedup);
    };
    next();
  };

  const clear = (c: Conn) => {
    stopReply(c);
    c.playingUntil = 0;
    emit(c, { event: "clear", stream_id: c.stream });
  };

  /** Speech then 300 ms of silence → a reply; speech over the agent → `clear`. */
  const listen = (c: Conn, pcm: Int16Array) => {
    let sum = 0;
    for (const s of pcm) sum += Math.abs(s);
    const voiced = pcm.length > 0 && sum / pcm.length > 500;
    if (voiced) {
      if (Date.now() < c.playingUntil) clear(c);
      c.voicedSamples += pcm.length;
      c.quietSamples = 0;
      return;
    }
    c.quietSamples += pcm.length;
    if (c.voicedSamples >= c.rate / 10 && c.quietSamples >= c.rate * 0.3) {
      c.voicedSamples = 0;
      speak(c, replyMs);
    }
  };

  const onEvent = (c: Conn, e: ClientEvent) => {
    if (!c.started) {
      if (e.event !== "start") {
        c.peer.close(1008, "first message must be start");
        return;
      }
      const format = options.ackFormat ?? e.config?.input_format ??
        "pcm_44100";
      const rate = FORMATS[format];
      if (rate === undefined) {
        c.peer.close(1008, "unsupported input_format");
        return;
      }
      c.started = true;
      c.rate = rate ?? 8000; // μ-law: acked (tests of the ack), but this fake speaks PCM
      c.stream = e.stream_id ?? crypto.randomUUID();
      if (options.ack === false) return;
      emit(c, {
        event: "ack",
        stream_id: c.stream,
        config: { input_format: format },
      });
      return;
    }
    if (
      e.event === "media_input" && e.stream_id === c.stream &&
      typeof e.media?.payload === "string"
    ) {
      const pcm = base64ToPcm(e.media.payload);
      userSamples += pcm.length;
      listen(c, pcm);
    }
  };

  const armIdle = (c: Conn) => {
    clearTimeout(c.idle);
    c.idle = setTimeout(() => {
      if (c.peer.closed) return;
      idleCloses++;
      stopReply(c);
      c.peer.close(1000, "connection idle timeout");
    }, idleMs);
  };

  const mint = async (req: Request): Promise<Response> => {
    const key = options.apiKey;
    if (!key || req.headers.get("authorization") !== `Bearer ${key}`) {
      return new Response("unauthorized", { status: 401 });
    }
    const body = await req.json().catch(() => null) as
      | Cartesia.AccessTokenCreateParams
      | null;
    const token = `tok_${crypto.randomUUID()}`;
    if (body?.grants?.agent === true) minted.add(token);
    const out: Cartesia.AccessTokenCreateResponse = { token };
    return Response.json(out);
  };

  const server = startWssServer((req) => {
    const url = new URL(req.url);
    if (req.method === "POST" && url.pathname === "/access-token") {
      return mint(req);
    }
    const m = url.pathname.match(/^\/agents\/stream\/([^/]+)$/);
    if (!m) return new Response("not found", { status: 404 });
    const auth = req.headers.get("authorization") ?? "";
    if (!auth.startsWith("Bearer ") || !minted.has(auth.slice(7))) {
      return new Response("unauthorized", { status: 401 });
    }
    if (req.headers.get("cartesia-version") !== CARTESIA_AGENTS_VERSION) {
      return new Response("bad version", { status: 400 });
    }
    if (!agents.has(decodeURIComponent(m[1]))) {
      return new Response("no such agent", { status: 404 });
    }
    const headers = new Headers(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    sockets.add(socket);
    const peer: FakePeer = {
      headers,
      url,
      json: [],
      binary: [],
      closed: false,
      send(data) {
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(data instanceof Uint8Array ? data : JSON.stringify(data));
      },
      sendRaw(data) {
        if (socket.readyState === WebSocket.OPEN) socket.send(data);
      },
      close(code = 1000, reason = "") {
        if (socket.readyState === WebSocket.OPEN) socket.close(code, reason);
      },
    };
    const c: Conn = {
      peer,
      stream: "",
      rate: 16000,
      started: false,
      playingUntil: 0,
      voicedSamples: 0,
      quietSamples: 0,
      arrivals: [],
    };
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      peers.push(peer);
      conns.push(c);
      armIdle(c);
      waiter.notify();
    };
    socket.onmessage = (e) => {
      c.arrivals.push(performance.now());
      armIdle(c);
      let msg: unknown = null;
      if (typeof e.data === "string") {
        try {
          msg = JSON.parse(e.data);
        } catch { /* not JSON: no event */ }
      } else peer.binary.push(new Uint8Array(e.data as ArrayBuffer));
      const ok = msg !== null && typeof msg === "object" &&
        typeof (msg as Json).event === "string";
      if (ok) peer.json.push(msg as Json);
      if (ok) onEvent(c, msg as ClientEvent);
      else if (!c.started) c.peer.close(1008, "first message must be start");
      waiter.notify();
    };
    socket.onclose = () => {
      peer.closed = true;
      clearTimeout(c.idle);
      stopReply(c);
      sockets.delete(socket);
      waiter.notify();
    };
    socket.onerror = () => {};
    return response;
  });

  const first = () => {
    const c = conns[0];
    if (!c) throw new Error("no connection yet");
    return c;
  };
  return {
    server,
    url: `${server.origin}/agents/stream`,
    peers,
    waiter,
    minted,
    peer: () => waiter.until(() => peers[0], "a peer"),
    message: (event) =>
      waiter.until(
        () => peers[0]?.json.find((m) => m.event === event),
        `a ${event} event`,
      ),
    userSamples: () => userSamples,
    idleCloses: () => idleCloses,
    arrivals: () => first().arrivals,
    say: (ms) => speak(first(), ms),
    streaming: () => first().reply !== undefined,
    clear: () => clear(first()),
    extras() {
      const c = first();
      emit(c, { event: "dtmf", stream_id: c.stream, dtmf: "5" });
      emit(c, {
        event: "custom",
        stream_id: c.stream,
        metadata: { agent_state: "processing" },
      });
    },
    endCall: () => first().peer.close(1000, "call ended by agent"),
    async close() {
      for (const c of conns) {
        clearTimeout(c.idle);
        stopReply(c);
      }
      for (const s of sockets) {
        try {
          s.close();
        } catch {
          // Already closing.
        }
      }
      await server.close();
    },
  };
}
