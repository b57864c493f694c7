/**
 * The `external_engine` adapter: External Conversation Engine Protocol v1 (DECISIONS 7,
 * docs/engine-protocol.md). The service is the WebSocket client; `auth_headers` go on
 * the upgrade request and nowhere else (never logged, never in an error).
 */
import {
  type EngineConnection,
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
  turnErrorCodeFor,
} from "./port.ts";
import { bytesToPcm, pcmToBytes, StreamResampler } from "./resample.ts";
import {
  CloseTracker,
  connectWs,
  gracefulEnd,
  type WsClient,
} from "./ws_client.ts";

const MIN_RATE = 8000;
const MAX_RATE = 96000;

type Json = Record<string, unknown>;

function validRate(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= MIN_RATE &&
    (v as number) <= MAX_RATE;
}

/** Upgrade headers from `auth_headers`; a name or value HTTP refuses is a misconfiguration. */
function upgradeHeaders(auth: Record<string, string>): Record<string, string> {
  try {
    // Headers validates names and values without echoing them.
    const h = new Headers(auth);
    return Object.fromEntries(h.entries());
  } catch {
    throw new EngineStartError(
      "misconfigured",
      "auth_headers holds an invalid header",
    );
  }
}

/** The ECEP v1 engine factory. */
export function createExternalEngine(deps: ProviderDeps): EngineFactory {
  return async ({ sessionId, credentials, events, signal }) => {
    if (credentials.type !== "external_engine") {
      throw new EngineStartError("misconfigured", "credentials mismatch");
    }
    let url: URL;
    try {
      url = new URL(credentials.url);
    } catch {
      throw new EngineStartError("misconfigured", "engine URL is invalid");
    }
    if (url.protocol !== "wss:") {
      throw new EngineStartError("misconfigured", "engine URL must be wss://");
    }
    const userRate = credentials.user_sample_rate;
    const tracker = new CloseTracker(events.onClose);
    let ready = false;
    let agentRate = 0;
    let dropAudio = false;
    let oddByte: number | null = null;
    let client: WsClient | null = null;

    const fatal = (message: string) => {
      events.onError({ code: turnErrorCodeFor(message), fatal: true, message });
      tracker.report(false, "engine error");
      client?.close(1011, "engine error");
    };

    const onText = (text: string) => {
      let msg: Json;
      try {
        const v = JSON.parse(text);
        if (!v || typeof v !== "object" || Array.isArray(v)) throw 0;
        msg = v as Json;
      } catch {
        deps.log.warn("engine sent an invalid frame", {
          provider: "external_engine",
          session_id: sessionId,
        });
        return;
      }
      switch (msg.type) {
        case "session.ready": {
          if (ready) return;
          const rate = (msg.agent_audio as Json | undefined)?.sample_rate;
          if (!validRate(rate)) {
            fatal(
              "engine sent session.ready without a valid agent_audio.sample_rate",
            );
            return;
          }
          ready = true;
          agentRate = rate;
          events.onReady({ agentSampleRate: rate });
          return;
        }
        case "response.start":
          dropAudio = false;
          events.onResponseStart(String(msg.response_id ?? ""));
          return;
        case "response.end":
          events.onResponseEnd(String(msg.response_id ?? ""));
          return;
        case "transcript": {
          if (msg.role !== "user" && msg.role !== "agent") return;
          if (typeof msg.text !== "string") return;
          events.onTranscript({
            role: msg.role,
            text: msg.text,
            final: msg.final !== false,
          });
          return;
        }
        case "error": {
          const message = typeof msg.message === "string"
            ? msg.message.slice(0, 500)
            : "engine error";
          if (msg.fatal === true) fatal(message);
          else {
            events.onError({
              code: turnErrorCodeFor(message),
              fatal: false,
              message,
            });
          }
          return;
        }
        default:
          // Unknown types are ignored: engines may send newer messages.
          return;
      }
    };

    const onBinary = (bytes: Uint8Array) => {
      if (!ready || dropAudio) return;
      let data = bytes;
      if (oddByte !== null) {
        data = new Uint8Array(bytes.length + 1);
        data[0] = oddByte;
        data.set(bytes, 1);
        oddByte = null;
      }
      if (data.length % 2 === 1) oddByte = data[data.length - 1];
      const pcm = bytesToPcm(data);
      if (pcm.length > 0) events.onAgentAudio(pcm, agentRate);
    };

    client = await connectWs(url, {
      headers: upgradeHeaders(credentials.auth_headers),
      guard: {
        allowPrivate: deps.config.allowPrivateNetworkTargets,
        resolver: deps.resolver,
      },
      connectTimeoutMs: deps.connectTimeoutMs ?? 10_000,
      signal,
      onMessage: (data) =>
        typeof data === "string" ? onText(data) : onBinary(data),
      onClose: () => tracker.socketClosed(),
    });
    const ws = client;
    ws.sendJson({
      type: "session.start",
      session_id: sessionId,
      user_audio: { encoding: "pcm_s16le", sample_rate: userRate },
    });
    deps.log.info("engine connected", {
      provider: "external_engine",
      session_id: sessionId,
    });

    const resampler = new StreamResampler(userRate);
    const conn: EngineConnection = {
      sendUserAudio(pcm, sampleRate) {
        if (!ready || tracker.done || tracker.ending) return;
        const out = resampler.push(pcm, sampleRate);
        if (out.length > 0) ws.sendBinary(pcmToBytes(out));
      },
      sendText(text) {
        if (!ready || tracker.done) return;
        ws.sendJson({ type: "user.text", text });
      },
      interrupt() {
        if (tracker.done) return;
        dropAudio = true;
        ws.sendJson({ type: "interrupt" });
      },
      end(timeoutMs) {
        return gracefulEnd(ws, tracker, timeoutMs, { type: "session.end" });
      },
      close() {
        tracker.callerClosed();
        ws.close(1000, "session closed");
      },
    };
    return conn;
  };
}
