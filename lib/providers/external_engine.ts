/**
 * The `external_engine` adapter: External Conversation Engine Protocol v1 (DECISIONS 7,
 * docs/engine-protocol.md). The service is the WebSocket client; `auth_headers` go on
 * the upgrade request and nowhere else (never logged, never in an error).
 */
import { z } from "zod";
import { credentialsFor, EngineLink, errorText, parseUrl } from "./adapter.ts";
import {
  engineId,
  errorMessageWithFatal,
  MessageSet,
  sampleRate,
  transcriptMessage,
} from "./frames.ts";
import {
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
} from "../ports/providers.ts";
import { pcmToBytes } from "./resample.ts";

/**
 * What an engine may send (docs/engine-protocol.md): a schema per type. Any other type,
 * and any field of the wrong type or over its bound, makes the frame invalid (ignored,
 * counted; a flood fails the session).
 */
export const ECEP_MESSAGES = new MessageSet({
  "session.ready": z.object({
    agent_audio: z.object({
      encoding: z.literal("pcm_s16le").optional(),
      sample_rate: sampleRate(),
    }),
  }),
  "response.start": z.object({ response_id: engineId() }),
  "response.end": z.object({ response_id: engineId() }),
  // Barge-in the engine detected: drop what is queued of that response (DECISIONS 7).
  "response.cancel": z.object({ response_id: engineId() }),
  "transcript": transcriptMessage(),
  "error": errorMessageWithFatal(),
}, "invalid");

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
    /** The response the engine started last. */
    let current: string | null = null;

    return await link.open({
      url,
      headers: upgradeHeaders(credentials.auth_headers),
      guard: true,
      hello: {
        type: "session.start",
        session_id: options.sessionId,
        user_audio: { encoding: "pcm_s16le", sample_rate: userRate },
      },
      messages: ECEP_MESSAGES,
      onMessage: (msg) => {
        switch (msg.type) {
          case "session.ready":
            if (!link.ready) link.markReady(msg.agent_audio.sample_rate);
            return;
          case "response.start":
            dropAudio = false;
            current = msg.response_id;
            events.onResponseStart(msg.response_id);
            return;
          case "response.end":
            events.onResponseEnd(msg.response_id);
            return;
          case "response.cancel":
            events.onResponseCancel?.(msg.response_id);
            return;
          case "transcript":
            events.onTranscript({
              role: msg.role,
              text: msg.text,
              final: msg.final,
            });
            return;
          case "error": {
            const message = errorText(msg.message, "engine error");
            if (msg.fatal) link.fail(message, "engine error");
            else link.turnError(message);
            return;
          }
        }
      },
      onMalformed: (type) => {
        if (type === "session.ready" && !link.ready) {
          link.fail(
            "engine sent session.ready without a valid agent_audio.sample_rate",
            "engine error",
          );
        }
      },
      onAudio: (pcm) => {
        if (link.ready && !dropAudio && pcm.length > 0) {
          events.onAgentAudio(pcm, link.agentRate);
        }
      },
      sendAudio: (pcm) => link.sendBinary(pcmToBytes(pcm)),
      sendText: (text) => link.send({ type: "user.text", text }),
      interrupt: (cut) => {
        // A cut of an older response (the engine already moved on) keeps the new one.
        if (!cut || cut.responseId === current) dropAudio = true;
        link.send(
          cut
            ? {
              type: "interrupt",
              response_id: cut.responseId,
              played_ms: Math.max(0, Math.round(cut.playedMs)),
            }
            : { type: "interrupt" },
        );
      },
      endMessage: { type: "session.end" },
    });
  };
}
