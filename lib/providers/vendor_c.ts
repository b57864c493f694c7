/**
 * The `vendor_c` adapter: a conversational-agent WebSocket at `/v1/convai/conversation`.
 * JSON both ways: `conversation_initiation_client_data` out, then
 * `conversation_initiation_metadata` in (audio formats such as `pcm_16000`); user audio
 * as `{user_audio_chunk: base64}`; agent audio as `audio` events (`audio_base_64`,
 * increasing `event_id`); `agent_response`, `user_transcript`, `interruption`; `ping`
 * answered by `pong` with its `event_id`; typed text as `user_message`.
 *
 * The protocol has no response boundaries: a response starts with its first audio event
 * and ends at an interruption, the next user transcript, or `responseIdleMs` without
 * audio. See docs/providers.md.
 */
import {
  credentialsFor,
  EngineLink,
  errorText,
  type Json,
  obj,
  parseUrl,
  str,
} from "./adapter.ts";
import {
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
} from "./port.ts";
import { base64ToPcm, pcmToBase64 } from "./resample.ts";

/** Samples per audio chunk message: keeps each JSON frame under 1 KiB. */
const CHUNK_SAMPLES = 360;

/** `pcm_16000` → 16000; any other format (e.g. `ulaw_8000`) → null. */
export function pcmFormatRate(format: unknown): number | null {
  const m = str(format).match(/^pcm_(\d{4,6})$/);
  return m ? Number(m[1]) : null;
}

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
    let dropAudio = false;
    let lastInterruption = -1;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;

    const endResponse = () => {
      clearTimeout(idleTimer);
      idleTimer = undefined;
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
      clearTimeout(idleTimer);
      idleTimer = setTimeout(endResponse, idleMs);
    };

    const onEvent = (ev: Json) => {
      switch (ev.type) {
        case "conversation_initiation_metadata": {
          if (link.ready) return;
          const meta = obj(ev.conversation_initiation_metadata_event);
          const out = pcmFormatRate(
            meta.agent_output_audio_format ?? "pcm_16000",
          );
          const input = pcmFormatRate(
            meta.user_input_audio_format ?? "pcm_16000",
          );
          if (out === null || input === null) {
            link.fail(
              "agent audio format is not PCM",
              "unsupported audio format",
              {
                code: "tts_failed",
              },
            );
            return;
          }
          link.markReady(out, input);
          return;
        }
        case "audio": {
          const a = obj(ev.audio_event);
          const eventId = typeof a.event_id === "number" ? a.event_id : 0;
          if (dropAudio || eventId <= lastInterruption) return;
          let pcm: Int16Array;
          try {
            pcm = base64ToPcm(str(a.audio_base_64));
          } catch {
            return;
          }
          beginResponse();
          events.onAgentAudio(pcm, link.agentRate);
          return;
        }
        case "agent_response": {
          // The agent's text usually comes before its audio: it opens the response.
          dropAudio = false;
          const t = str(obj(ev.agent_response_event).agent_response);
          if (!t) return;
          beginResponse();
          events.onTranscript({ role: "agent", text: t, final: true });
          return;
        }
        case "user_transcript": {
          endResponse();
          dropAudio = false;
          const t = str(obj(ev.user_transcription_event).user_transcript);
          if (t) events.onTranscript({ role: "user", text: t, final: true });
          return;
        }
        case "interruption": {
          const id = obj(ev.interruption_event).event_id;
          if (typeof id === "number") {
            lastInterruption = Math.max(lastInterruption, id);
          }
          const wasSpeaking = response !== null;
          endResponse();
          if (wasSpeaking) events.onBargeIn?.();
          return;
        }
        case "ping":
          link.send({
            type: "pong",
            event_id: obj(ev.ping_event).event_id,
          });
          return;
        case "error": {
          const e = obj(ev.error_event ?? ev.error);
          link.turnError(errorText(str(e.message) || str(ev.message)));
          return;
        }
        default:
          return;
      }
    };

    return await link.open({
      url,
      headers,
      hello: { type: "conversation_initiation_client_data" },
      onEvent,
      sendAudio: (pcm) => {
        for (let i = 0; i < pcm.length; i += CHUNK_SAMPLES) {
          link.send({
            user_audio_chunk: pcmToBase64(pcm.subarray(i, i + CHUNK_SAMPLES)),
          });
        }
      },
      sendText: (text) => {
        // Audio still in flight from an interrupted turn stays dropped until the
        // agent's next turn announces itself (agent_response / user_transcript).
        endResponse();
        link.send({ type: "user_message", text });
      },
      interrupt: () => {
        // No cancel message exists: signal user activity and drop the rest locally.
        dropAudio = true;
        endResponse();
        link.send({ type: "user_activity" });
      },
      dispose: () => clearTimeout(idleTimer),
    });
  };
}
