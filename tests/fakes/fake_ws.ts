/**
 * Building blocks of the provider fakes: a recording wss server (every peer's upgrade
 * headers, URL, JSON and binary frames) with protocol hooks, and a recorder of
 * `EngineEvents` with waiters. Waiters are bounded only so a broken test fails instead
 * of hanging; nothing asserts on time.
 */
import { memoryLogger } from "../../lib/log.ts";
import type { EngineEvents, ProviderDeps } from "../../lib/ports/providers.ts";
import { startWssServer, type WssServer } from "./wss_server.ts";

export type Json = Record<string, unknown>;

/** Resolves when `check()` returns a value; re-checked whenever `signal` notifies. */
export class Waiter {
  #wake = new Set<() => void>();
  notify(): void {
    for (const w of [...this.#wake]) w();
  }
  until<T>(
    check: () => T | undefined | null | false,
    what: string,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const attempt = () => {
        const v = check();
        if (v !== undefined && v !== null && v !== false) {
          done();
          resolve(v);
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`waited too long for ${what}`));
      }, 10_000);
      const done = () => {
        clearTimeout(timer);
        this.#wake.delete(attempt);
      };
      if (!attempt()) this.#wake.add(attempt);
    });
  }
}

export interface FakePeer {
  headers: Headers;
  url: URL;
  json: Json[];
  binary: Uint8Array[];
  closed: boolean;
  send(data: Json | Uint8Array): void;
  /** Sends `data` as is: a text frame (any text, JSON or not) or a binary frame. */
  sendRaw(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}

export interface FakeHooks {
  /** Return a Response to refuse the upgrade. */
  refuse?(req: Request): Response | undefined;
  onOpen?(peer: FakePeer): void;
  onJson?(peer: FakePeer, msg: Json): void;
  onBinary?(peer: FakePeer, bytes: Uint8Array): void;
}

export interface FakeWs {
  server: WssServer;
  /** Base wss URL (origin + `path`). */
  url: string;
  peers: FakePeer[];
  waiter: Waiter;
  /** The first peer, once connected. */
  peer(): Promise<FakePeer>;
  /** Resolves with the first JSON message of `type` from the first peer. */
  message(type: string): Promise<Json>;
  close(): Promise<void>;
}

/** Starts a recording fake on wss://localhost:PORT`path`. */
export function startFakeWs(path: string, hooks: FakeHooks): FakeWs {
  const peers: FakePeer[] = [];
  const waiter = new Waiter();
  const sockets = new Set<WebSocket>();
  const server = startWssServer((req) => {
    const refused = hooks.refuse?.(req);
    if (refused) return refused;
    const headers = new Headers(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    sockets.add(socket);
    const peer: FakePeer = {
      headers,
      url: new URL(req.url),
      json: [],
      binary: [],
      closed: false,
      send(data) {
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(
          data instanceof Uint8Array ? data : JSON.stringify(data),
        );
      },
      sendRaw(data) {
        if (socket.readyState === WebSocket.OPEN) socket.send(data);
      },
      close(code = 1000, reason = "") {
        if (socket.readyState === WebSocket.OPEN) socket.close(code, reason);
      },
    };
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      peers.push(peer);
      hooks.onOpen?.(peer);
      waiter.notify();
    };
    socket.onmessage = (e) => {
      if (typeof e.data === "string") {
        const msg = JSON.parse(e.data) as Json;
        peer.json.push(msg);
        hooks.onJson?.(peer, msg);
      } else {
        const bytes = new Uint8Array(e.data as ArrayBuffer);
        peer.binary.push(bytes);
        hooks.onBinary?.(peer, bytes);
      }
      waiter.notify();
    };
    socket.onclose = () => {
      peer.closed = true;
      sockets.delete(socket);
      waiter.notify();
    };
    socket.onerror = () => {};
    return response;
  });
  return {
    server,
    url: server.origin + path,
    peers,
    waiter,
    peer: () => waiter.until(() => peers[0], "a peer"),
    message: (type) =>
      waiter.until(
        () => peers[0]?.json.find((m) => m.type === type),
        `a ${type} message`,
      ),
    async close() {
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

export interface RecordedEvents extends EngineEvents {
  ready: number[];
  starts: string[];
  ends: string[];
  audio: { samples: number; rate: number }[];
  transcripts: { role: string; text: string; final: boolean }[];
  errors: { code: string; fatal: boolean; message: string }[];
  closes: { clean: boolean; reason: string }[];
  bargeIns: number;
  /** Response ids the engine cancelled (`response.cancel`). */
  cancels: string[];
  waiter: Waiter;
  /** Total agent audio samples received. */
  audioSamples(): number;
}

/** `EngineEvents` that record everything and wake waiters. */
export function recordEvents(): RecordedEvents {
  const waiter = new Waiter();
  const r: RecordedEvents = {
    ready: [],
    starts: [],
    ends: [],
    audio: [],
    transcripts: [],
    errors: [],
    closes: [],
    bargeIns: 0,
    cancels: [],
    waiter,
    audioSamples: () => r.audio.reduce((n, a) => n + a.samples, 0),
    onReady: ({ agentSampleRate }) => {
      r.ready.push(agentSampleRate);
      waiter.notify();
    },
    onResponseStart: (id) => {
      r.starts.push(id);
      waiter.notify();
    },
    onAgentAudio: (pcm, rate) => {
      r.audio.push({ samples: pcm.length, rate });
      waiter.notify();
    },
    onResponseEnd: (id) => {
      r.ends.push(id);
      waiter.notify();
    },
    onTranscript: (t) => {
      r.transcripts.push(t);
      waiter.notify();
    },
    onError: (e) => {
      r.errors.push(e);
      waiter.notify();
    },
    onClose: (c) => {
      r.closes.push(c);
      waiter.notify();
    },
    onBargeIn: () => {
      r.bargeIns++;
      waiter.notify();
    },
    onResponseCancel: (id) => {
      r.cancels.push(id);
      waiter.notify();
    },
  };
  return r;
}

/** Total PCM16 samples in a list of binary frames. */
export function sampleCount(frames: Uint8Array[]): number {
  return frames.reduce((n, f) => n + f.length / 2, 0);
}

/** `n` samples of a 440 Hz tone at `rate`. */
export function tone(n: number, rate: number): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  }
  return out;
}

/** Adapter deps for tests: loopback endpoints, a memory log, private targets allowed. */
export function providerDeps(
  overrides: {
    allowPrivate?: boolean;
    endpoints?: Partial<ProviderDeps["config"]["providerEndpoints"]>;
    resolver?: ProviderDeps["resolver"];
    connectTimeoutMs?: number;
    now?: () => number;
  } = {},
): ProviderDeps & { log: ReturnType<typeof memoryLogger> } {
  return {
    config: {
      allowPrivateNetworkTargets: overrides.allowPrivate ?? true,
      providerEndpoints: {
        vendorARealtimeUrl: "wss://localhost:1/v1/realtime",
        vendorBUrl: "wss://localhost:1/v1/agent",
        vendorCUrl: "wss://localhost:1/v1/convai/conversation",
        vendorCApiUrl: "https://localhost:1",
        ...overrides.endpoints,
      },
    },
    log: memoryLogger(),
    resolver: overrides.resolver,
    connectTimeoutMs: overrides.connectTimeoutMs,
    now: overrides.now,
  };
}
