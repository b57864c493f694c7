/**
 * The `external_engine` adapter: External Conversation Engine Protocol v1 (DECISIONS 7,
 * docs/engine-protocol.md). The service is the WebSocket client; `auth_headers` go on
 * the upgrade request and nowhere else (never logged, never in an error).
 */
import { credentialsFor, EngineLink, type Json, parseUrl } from "./adapter.ts";
import {
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
} from "./port.ts";
import { bytesToPcm, pcmToBytes } from "./resample.ts";

const MIN_RATE = 8000;
const MAX_RATE = 96000;

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
  return async (options) => {
    const credentials = credentialsFor(options.credentials, "external_engine");
    const url = parseUrl(credentials.url, "engine URL is invalid");
    if (url.protocol !== "wss:") {
      throw new EngineStartError("misconfigured", "engine URL must be wss://");
    }
    const userRate = credentials.user_sample_rate;
    const link = new EngineLink(deps, options, "external_engine", userRate);
    const { events } = link;
    let dropAudio = false;
    let oddByte: number | null = null;

    const onEvent = (msg: Json) => {
      switch (msg.type) {
        case "session.ready": {
          if (link.ready) return;
          const rate = (msg.agent_audio as Json | undefined)?.sample_rate;
          if (!validRate(rate)) {
            link.fail(
              "engine sent session.ready without a valid agent_audio.sample_rate",
              "engine error",
            );
            return;
          }
          link.markReady(rate);
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
          if (msg.fatal === true) link.fail(message, "engine error");
          else link.turnError(message);
          return;
        }
        default:
          // Unknown types are ignored: engines may send newer messages.
          return;
      }
    };

    const onBinary = (bytes: Uint8Array) => {
      if (!link.ready || dropAudio) return;
      let data = bytes;
      if (oddByte !== null) {
        data = new Uint8Array(bytes.length + 1);
        data[0] = oddByte;
        data.set(bytes, 1);
        oddByte = null;
      }
      if (data.length % 2 === 1) oddByte = data[data.length - 1];
      const pcm = bytesToPcm(data);
      if (pcm.length > 0) events.onAgentAudio(pcm, link.agentRate);
    };

    return await link.open({
      url,
      headers: upgradeHeaders(credentials.auth_headers),
      guard: true,
      hello: {
        type: "session.start",
        session_id: options.sessionId,
        user_audio: { encoding: "pcm_s16le", sample_rate: userRate },
      },
      onEvent,
      onInvalidText: () =>
        deps.log.warn("engine sent an invalid frame", {
          provider: "external_engine",
          session_id: options.sessionId,
        }),
      onBinary,
      sendAudio: (pcm) => link.sendBinary(pcmToBytes(pcm)),
      sendText: (text) => link.send({ type: "user.text", text }),
      interrupt: () => {
        dropAudio = true;
        link.send({ type: "interrupt" });
      },
      endMessage: { type: "session.end" },
    });
  };
}
