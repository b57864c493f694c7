/**
 * The `vendor_a_realtime` adapter: a realtime speech-to-speech WebSocket API with JSON
 * events (session.update, input_audio_buffer.append, conversation.item.create,
 * response.create/cancel, conversation.item.truncate; server events response.*,
 * conversation.item.input_audio_transcription.*, input_audio_buffer.speech_started,
 * error). Audio both ways is base64 PCM16 mono at 24 kHz. The customer's ephemeral
 * `client_secret` is the bearer token of the upgrade. See docs/providers.md.
 */
import {
  credentialsFor,
  EngineLink,
  errorText,
  type Json,
  parseUrl,
  str,
} from "./adapter.ts";
import type { EngineFactory, ProviderDeps } from "./port.ts";
import { base64ToPcm, pcmToBase64 } from "./resample.ts";

/** The API's PCM rate, both directions. */
export const VENDOR_A_RATE = 24000;
/** Samples per append message: keeps each JSON frame under 1 KiB (Nagle, see ws_client). */
const APPEND_SAMPLES = 360;
/** Errors that only say a cancel/truncate raced the end of a response. */
const BENIGN_ERRORS = new Set([
  "response_cancel_not_active",
  "item_truncate_invalid_item_id",
]);

/** The vendor_a realtime engine factory. */
export function createVendorAEngine(deps: ProviderDeps): EngineFactory {
  const now = deps.now ?? Date.now;
  return async (options) => {
    const credentials = credentialsFor(
      options.credentials,
      "vendor_a_realtime",
    );
    const url = parseUrl(
      deps.config.providerEndpoints.vendorARealtimeUrl,
      "provider endpoint invalid",
    );
    const link = new EngineLink(deps, options, "vendor_a", VENDOR_A_RATE);
    const { events } = link;
    /** The response being generated, until response.done. */
    let current: string | null = null;
    let dropAudio = false;
    /** An error was already reported for the current response. */
    let errored = false;
    let audioItem: { id: string; ms: number; firstAt: number } | null = null;
    const agentText = new Map<string, string>();
    const userText = new Map<string, string>();

    const cutResponse = () => {
      if (current === null) return;
      dropAudio = true;
      link.send({ type: "response.cancel" });
      if (audioItem) {
        const played = Math.min(audioItem.ms, now() - audioItem.firstAt);
        link.send({
          type: "conversation.item.truncate",
          item_id: audioItem.id,
          content_index: 0,
          audio_end_ms: Math.max(0, Math.floor(played)),
        });
      }
    };

    const onEvent = (ev: Json) => {
      switch (ev.type) {
        case "session.created":
          if (!link.ready) link.markReady(VENDOR_A_RATE);
          return;
        case "response.created": {
          const id = str((ev.response as Json | undefined)?.id);
          current = id;
          errored = false;
          dropAudio = false;
          audioItem = null;
          events.onResponseStart(id);
          return;
        }
        case "response.output_audio.delta":
        case "response.audio.delta": {
          if (dropAudio || str(ev.response_id) !== current) return;
          let pcm: Int16Array;
          try {
            pcm = base64ToPcm(str(ev.delta));
          } catch {
            return;
          }
          const itemId = str(ev.item_id);
          if (!audioItem || audioItem.id !== itemId) {
            audioItem = { id: itemId, ms: 0, firstAt: now() };
          }
          audioItem.ms += (pcm.length * 1000) / VENDOR_A_RATE;
          events.onAgentAudio(pcm, VENDOR_A_RATE);
          return;
        }
        case "response.output_audio_transcript.delta":
        case "response.audio_transcript.delta": {
          const id = str(ev.item_id);
          const acc = (agentText.get(id) ?? "") + str(ev.delta);
          agentText.set(id, acc);
          events.onTranscript({ role: "agent", text: acc, final: false });
          return;
        }
        case "response.output_audio_transcript.done":
        case "response.audio_transcript.done": {
          const id = str(ev.item_id);
          const full = str(ev.transcript) || (agentText.get(id) ?? "");
          agentText.delete(id);
          events.onTranscript({ role: "agent", text: full, final: true });
          return;
        }
        case "conversation.item.input_audio_transcription.delta": {
          const id = str(ev.item_id);
          const acc = (userText.get(id) ?? "") + str(ev.delta);
          userText.set(id, acc);
          events.onTranscript({ role: "user", text: acc, final: false });
          return;
        }
        case "conversation.item.input_audio_transcription.completed": {
          userText.delete(str(ev.item_id));
          events.onTranscript({
            role: "user",
            text: str(ev.transcript),
            final: true,
          });
          return;
        }
        case "conversation.item.input_audio_transcription.failed":
          events.onError({
            code: "stt_failed",
            fatal: false,
            message: "input transcription failed",
          });
          return;
        case "input_audio_buffer.speech_started":
          if (current !== null && !dropAudio) {
            cutResponse();
            events.onBargeIn?.();
          }
          return;
        case "response.done": {
          const r = (ev.response ?? {}) as Json;
          const id = str(r.id);
          if (r.status === "failed" && !errored) {
            const err = ((r.status_details as Json | undefined)?.error ??
              {}) as Json;
            link.turnError(str(err.message) || "response failed");
          }
          if (id === current) current = null;
          events.onResponseEnd(id);
          return;
        }
        case "error": {
          const err = (ev.error ?? {}) as Json;
          if (BENIGN_ERRORS.has(str(err.code))) return;
          const message = errorText(err.message);
          if (!link.ready) {
            link.fail(message, "provider error before ready", {
              code: "llm_failed",
              closeReason: "provider error",
            });
            return;
          }
          errored = current !== null;
          link.turnError(message);
          return;
        }
        default:
          return;
      }
    };

    return await link.open({
      url,
      headers: { authorization: `Bearer ${credentials.client_secret}` },
      hello: {
        type: "session.update",
        session: {
          type: "realtime",
          output_modalities: ["audio"],
          audio: {
            input: { format: { type: "audio/pcm", rate: VENDOR_A_RATE } },
            output: { format: { type: "audio/pcm", rate: VENDOR_A_RATE } },
          },
        },
      },
      onEvent,
      sendAudio: (pcm) => {
        for (let i = 0; i < pcm.length; i += APPEND_SAMPLES) {
          link.send({
            type: "input_audio_buffer.append",
            audio: pcmToBase64(pcm.subarray(i, i + APPEND_SAMPLES)),
          });
        }
      },
      sendText: (text) => {
        link.send({
          type: "conversation.item.create",
          item: {
            type: "message",
            role: "user",
            content: [{ type: "input_text", text }],
          },
        });
        link.send({ type: "response.create" });
      },
      interrupt: cutResponse,
    });
  };
}
