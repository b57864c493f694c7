/**
 * The `vendor_c` adapter: ElevenLabs Conversational AI (DECISIONS 7b; npm
 * `@elevenlabs/client`, `@elevenlabs/types`), the WebSocket at
 * `/v1/convai/conversation`. JSON both ways: `conversation_initiation_client_data` out,
 * then `conversation_initiation_metadata` in (audio formats such as `pcm_16000`); user
 * audio as `{user_audio_chunk: base64}`; agent audio as `audio` events (`audio_base_64`,
 * the turn's `event_id`); `agent_response` (+ `agent_response_correction` after an
 * interruption), `user_transcript`, `interruption`; `ping` answered by `pong`; typed
 * text as `user_message`; every `client_tool_call` answered with an `is_error`
 * `client_tool_result` (the service runs no client tools, as the official client does
 * for a tool it does not know); `error` with `error_type: max_duration_exceeded` ends
 * the conversation.
 *
 * The protocol has no response boundaries: a response starts with its first audio event
 * and ends at an interruption, the next user transcript, or `responseIdleMs` without
 * audio. After an interrupt, agent audio is dropped by `event_id`: up to the last one
 * heard (ours) or the interruption's. See docs/providers.md.
 */
import { z } from "zod";
import { credentialsFor, EngineLink, errorText, parseUrl } from "./adapter.ts";
import {
  errorMessage,
  type Message,
  MessageSet,
  transcriptText,
} from "./frames.ts";
import {
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
} from "../ports/providers.ts";
import { pcmToBase64 } from "./resample.ts";

/** Samples per audio chunk message: keeps each JSON frame under 1 KiB. */
const CHUNK_SAMPLES = 360;

/** `pcm_16000` → 16000; any other format (e.g. `ulaw_8000`) or rate → null. */
export function pcmFormatRate(format: string): number | null {
  const m = format.match(/^pcm_(\d{4,5})$/);
  const rate = m ? Number(m[1]) : 0;
  return rate >= 8000 && rate <= 96_000 ? rate : null;
}

const eventId = () => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const audioFormat = () => z.string().max(64).nullish();
const errorFields = z.object({
  message: errorMessage().nullish(),
  reason: errorMessage().nullish(),
  error_type: z.string().max(64).nullish(),
});

/**
 * The agent events this adapter uses, a schema each. Other event types are ignored
 * uncounted (the API adds types); a used type with a wrong-typed field is invalid.
 */
export const VENDOR_C_MESSAGES = new MessageSet({
  "conversation_initiation_metadata": z.object({
    conversation_initiation_metadata_event: z.object({
      agent_output_audio_format: audioFormat(),
      user_input_audio_format: audioFormat(),
    }).nullish(),
  }),
  "audio": z.object({
    audio_event: z.object({
      audio_base_64: z.string(),
      event_id: eventId().nullish(),
    }),
  }),
  "agent_response": z.object({
    agent_response_event: z.object({
      agent_response: transcriptText(),
      event_id: eventId().nullish(),
    }),
  }),
  "agent_response_correction": z.object({
    agent_response_correction_event: z.object({
      corrected_agent_response: transcriptText(),
      event_id: eventId().nullish(),
    }),
  }),
  "client_tool_call": z.object({
    client_tool_call: z.object({
      tool_name: z.string().max(256),
      tool_call_id: z.string().max(256),
    }),
  }),
  "user_transcript": z.object({
    user_transcription_event: z.object({ user_transcript: transcriptText() }),
  }),
  "interruption": z.object({
    interruption_event: z.object({ event_id: eventId().nullish() }).nullish(),
  }),
  "ping": z.object({ ping_event: z.object({ event_id: eventId() }) }),
  "error": z.object({
    error_event: errorFields.nullish(),
    error: errorFields.nullish(),
    message: errorMessage().nullish(),
  }),
}, "ignore");

export interface VendorCOptions {
  /** A response ends after this long without agent audio. */
  responseIdleMs?: number;
}

/**
 * The WebSocket URL for `credentials`: a given `signed_url` (checked to be on the
 * configured host and path), else the configured endpoint with `agent_id` in the query.
 * Create runs the same check (`checkProviderTargets`); this one is defence in depth.
 */
export function vendorCUrl(
  endpoint: string,
  creds: { agent_id: string; signed_url?: string },
): URL {
  const base = new URL(endpoint);
  if (!creds.signed_url) {
    base.searchParams.set("agent_id", creds.agent_id);
    return base;
  }
  const signed = parseUrl(creds.signed_url, "signed_url is invalid");
  if (
    signed.protocol !== "wss:" || signed.host !== base.host ||
    signed.pathname !== base.pathname || signed.username || signed.password
  ) {
    throw new EngineStartError(
      "misconfigured",
      "signed_url is not on the provider's conversation endpoint",
    );
  }
  return signed;
}

/** The vendor_c engine factory. */
export function createVendorCEngine(
  deps: ProviderDeps,
  options: VendorCOptions = {},
): EngineFactory {
  const idleMs = options.responseIdleMs ?? 1500;
  return async (options) => {
    const credentials = credentialsFor(options.credentials, "vendor_c");
    const url = vendorCUrl(
      deps.config.providerEndpoints.vendorCUrl,
      credentials,
    );
    // A private agent without a pre-minted URL: the key goes in a header, never the URL.
    const headers: Record<string, string> =
      credentials.api_key && !credentials.signed_url
        ? { "xi-api-key": credentials.api_key }
        : {};
    const link = new EngineLink(deps, options, "vendor_c", 16000);
    const { events } = link;
    let response: string | null = null;
    let responses = 0;
    /** Agent audio (and text) of turns up to this event id is dropped. */
    let dropUpTo = -1;
    /** The event id of the last agent audio received. */
    let lastHeard = -1;
    let cancelIdle = () => {};
    /** Whether an agent event of turn `id` belongs to a turn cut off (ids are per turn). */
    const dropped = (id: number | null | undefined) =>
      typeof id === "number" && id <= dropUpTo;

    const endResponse = () => {
      cancelIdle();
      if (response === null) return;
      const id = response;
      response = null;
      events.onResponseEnd(id);
    };

    /** Opens a response if none is open, and (re)arms its end after silence. */
    const beginResponse = () => {
      if (response === null) {
        response = `r${++responses}`;
        events.onResponseStart(response);
      }
      cancelIdle();
      cancelIdle = link.later(endResponse, idleMs);
    };

    const onMessage = (ev: Message<typeof VENDOR_C_MESSAGES>) => {
      switch (ev.type) {
        case "conversation_initiation_metadata": {
          if (link.ready) return;
          const meta = ev.conversation_initiation_metadata_event;
          const out = pcmFormatRate(
            meta?.agent_output_audio_format ?? "pcm_16000",
          );
          const input = pcmFormatRate(
            meta?.user_input_audio_format ?? "pcm_16000",
          );
          if (out === null || input === null) {
            link.fail(
              "agent audio format is not PCM",
              "unsupported audio format",
              { code: "tts_failed" },
            );
            return;
          }
          link.markReady(out, input);
          return;
        }
        case "audio": {
          const a = ev.audio_event;
          if (dropped(a.event_id)) return;
          if (typeof a.event_id === "number") lastHeard = a.event_id;
          const pcm = link.base64Audio(a.audio_base_64);
          if (!pcm) return;
          beginResponse();
          events.onAgentAudio(pcm, link.agentRate);
          return;
        }
        case "agent_response": {
          // The agent's text usually comes before its audio: it opens the response.
          const t = ev.agent_response_event.agent_response;
          if (!t || dropped(ev.agent_response_event.event_id)) return;
          beginResponse();
          events.onTranscript({ role: "agent", text: t, final: true });
          return;
        }
        case "agent_response_correction": {
          const t = ev.agent_response_correction_event.corrected_agent_response;
          events.onTranscript({
            role: "agent",
            text: t,
            final: true,
            correction: true,
          });
          return;
        }
        case "client_tool_call": {
          const call = ev.client_tool_call;
          link.send({
            type: "client_tool_result",
            tool_call_id: call.tool_call_id,
            result:
              `Client tool with name ${call.tool_name} is not defined on client`,
            is_error: true,
          });
          return;
        }
        case "user_transcript": {
          endResponse();
          const t = ev.user_transcription_event.user_transcript;
          if (t) events.onTranscript({ role: "user", text: t, final: true });
          return;
        }
        case "interruption": {
          const id = ev.interruption_event?.event_id;
          if (typeof id === "number") dropUpTo = Math.max(dropUpTo, id);
          const wasSpeaking = response !== null;
          endResponse();
          if (wasSpeaking) events.onBargeIn?.();
          return;
        }
        case "ping":
          link.send({ type: "pong", event_id: ev.ping_event.event_id });
          return;
        case "error": {
          const e = ev.error_event ?? ev.error;
          const message = errorText(e?.message || e?.reason || ev.message);
          if (e?.error_type === "max_duration_exceeded") {
            endResponse();
            link.conversationOver(
              "the conversation reached its maximum duration",
            );
            return;
          }
          link.turnError(message);
          return;
        }
      }
    };

    return await link.open({
      url,
      headers,
      hello: { type: "conversation_initiation_client_data" },
      messages: VENDOR_C_MESSAGES,
      onMessage,
      onMalformed: (type) => {
        if (type === "conversation_initiation_metadata" && !link.ready) {
          link.fail(
            "agent audio format is not PCM",
            "unsupported audio format",
            { code: "tts_failed" },
          );
        }
      },
      sendAudio: (pcm) => {
        for (let i = 0; i < pcm.length; i += CHUNK_SAMPLES) {
          link.send({
            user_audio_chunk: pcmToBase64(pcm.subarray(i, i + CHUNK_SAMPLES)),
          });
        }
      },
      sendText: (text) => {
        endResponse();
        link.send({ type: "user_message", text });
      },
      interrupt: () => {
        // No cancel message exists: signal user activity and drop the rest of the
        // turns heard so far locally (by event id, whatever order the next turn's
        // text and audio come in).
        dropUpTo = Math.max(dropUpTo, lastHeard);
        endResponse();
        link.send({ type: "user_activity" });
      },
    });
  };
}
