/**
 * The `vendor_a_realtime` adapter: the OpenAI Realtime API, GA shape (DECISIONS 7b; npm
 * `openai`, `resources/realtime`): JSON events (session.update, input_audio_buffer.append,
 * conversation.item.create, response.create/cancel, conversation.item.truncate; server
 * events response.*, conversation.item.input_audio_transcription.*,
 * input_audio_buffer.speech_started, error). Audio both ways is base64 PCM16 mono at
 * 24 kHz. The customer's ephemeral `client_secret` is the bearer token of the upgrade
 * (the model is bound into it: no `?model=`, no beta header).
 *
 * The API streams audio far faster than real time, so `response.done` comes long before
 * the avatar finished saying it: the last audio item stays known until the next response
 * starts, and a barge-in or interrupt after `response.done` still truncates it, at the
 * `played_ms` the media plane reports (what the browser was streamed), clamped to the
 * audio received. `response.cancel` goes only while a response is in progress. See
 * docs/providers.md.
 */
import { z } from "zod";
import { credentialsFor, EngineLink, errorText, parseUrl } from "./adapter.ts";
import {
  engineId,
  errorMessage,
  MAX_TRANSCRIPT_LENGTH,
  type Message,
  MessageSet,
  transcriptText,
} from "./frames.ts";
import type {
  EngineFactory,
  ProviderDeps,
  ResponseCut,
} from "../ports/providers.ts";
import { pcmToBase64 } from "./resample.ts";

/** The API's PCM rate, both directions. */
export const VENDOR_A_RATE = 24000;
/** Samples per append message: keeps each JSON frame under 1 KiB (Nagle, see ws_client). */
const APPEND_SAMPLES = 360;
/** Errors that only say a cancel/truncate raced the end of a response. */
const BENIGN_ERRORS = new Set([
  "response_cancel_not_active",
  "item_truncate_invalid_item_id",
]);

const audioDelta = z.object({
  response_id: engineId(),
  item_id: engineId(),
  delta: z.string(),
});
const transcriptDelta = z.object({
  item_id: engineId(),
  delta: transcriptText(),
});
const transcriptDone = z.object({
  item_id: engineId(),
  transcript: transcriptText().nullish(),
});
const short = () => z.string().max(256).nullish();
const noFields = z.object({});

/**
 * The server events this adapter uses, a schema each. Other event types are ignored
 * uncounted (the API adds types); a used type with a wrong-typed field is invalid.
 */
export const VENDOR_A_MESSAGES = new MessageSet({
  "session.created": noFields,
  "response.created": z.object({
    response: z.object({ id: engineId().nullish() }),
  }),
  "response.output_audio.delta": audioDelta,
  "response.audio.delta": audioDelta,
  "response.output_audio_transcript.delta": transcriptDelta,
  "response.audio_transcript.delta": transcriptDelta,
  "response.output_audio_transcript.done": transcriptDone,
  "response.audio_transcript.done": transcriptDone,
  "conversation.item.input_audio_transcription.delta": transcriptDelta,
  "conversation.item.input_audio_transcription.completed": z.object({
    item_id: engineId(),
    transcript: transcriptText(),
  }),
  "conversation.item.input_audio_transcription.failed": noFields,
  "input_audio_buffer.speech_started": noFields,
  "response.done": z.object({
    response: z.object({
      id: engineId().nullish(),
      status: z.string().max(64).nullish(),
      status_details: z.object({
        error: z.object({ message: errorMessage().nullish() }).nullish(),
      }).nullish(),
    }),
  }),
  "error": z.object({
    error: z.object({
      type: short(),
      code: short(),
      message: errorMessage().nullish(),
    }),
  }),
}, "ignore");

/** Transcripts being accumulated at once, at most (the oldest is dropped past it). */
const MAX_OPEN_TRANSCRIPTS = 8;

/** `delta` appended to the text of `id` in `texts`, both bounded; returns the text. */
function accumulate(
  texts: Map<string, string>,
  id: string,
  delta: string,
): string {
  const acc = ((texts.get(id) ?? "") + delta).slice(0, MAX_TRANSCRIPT_LENGTH);
  texts.delete(id);
  texts.set(id, acc);
  while (texts.size > MAX_OPEN_TRANSCRIPTS) {
    texts.delete(texts.keys().next().value!);
  }
  return acc;
}

/** The audio item last streamed: it may still be playing after `response.done`. */
interface AudioItem {
  id: string;
  responseId: string;
  /** Where it starts in its response's audio (ms). */
  startMs: number;
  /** Its audio received so far (ms). */
  ms: number;
  /** Where in the response's audio its last transcript delta was placed (ms). */
  textAt: number;
  truncated: boolean;
}

/** The vendor_a realtime engine factory. */
export function createVendorAEngine(deps: ProviderDeps): EngineFactory {
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
    /** The response in progress (response.created … response.done). */
    let current: string | null = null;
    /** The latest response: its audio may still be playing after it is done. */
    let latest: string | null = null;
    let responseMs = 0;
    let responses = 0;
    let dropAudio = false;
    /** An error was already reported for the current response. */
    let errored = false;
    let item: AudioItem | null = null;
    const agentText = new Map<string, string>();
    const userText = new Map<string, string>();

    /**
     * Cuts the avatar's answer: `response.cancel` while it is still generated, and the
     * item being played truncated at `cut.playedMs` of its response's audio (what the
     * browser was streamed), clamped to the audio received. Once per item.
     */
    const cutResponse = (cut?: ResponseCut) => {
      if (current !== null && !dropAudio) {
        dropAudio = true;
        link.send({ type: "response.cancel" });
      }
      if (
        !cut || !item || item.truncated || cut.responseId !== item.responseId
      ) {
        return;
      }
      item.truncated = true;
      const played = Math.min(
        item.ms,
        Math.max(0, cut.playedMs - item.startMs),
      );
      link.send({
        type: "conversation.item.truncate",
        item_id: item.id,
        content_index: 0,
        audio_end_ms: Math.floor(played),
      });
    };

    const onMessage = (ev: Message<typeof VENDOR_A_MESSAGES>) => {
      switch (ev.type) {
        case "session.created":
          if (!link.ready) link.markReady(VENDOR_A_RATE);
          return;
        case "response.created": {
          const id = ev.response.id ?? `response_${++responses}`;
          current = latest = id;
          responseMs = 0;
          errored = false;
          dropAudio = false;
          item = null;
          events.onResponseStart(id);
          return;
        }
        case "response.output_audio.delta":
        case "response.audio.delta": {
          if (dropAudio || ev.response_id !== current) return;
          const pcm = link.base64Audio(ev.delta);
          if (!pcm) return;
          if (!item || item.id !== ev.item_id) {
            item = {
              id: ev.item_id,
              responseId: current,
              startMs: responseMs,
              ms: 0,
              textAt: responseMs,
              truncated: false,
            };
          }
          const ms = (pcm.length * 1000) / VENDOR_A_RATE;
          item.ms += ms;
          responseMs += ms;
          events.onAgentAudio(pcm, VENDOR_A_RATE);
          return;
        }
        case "response.output_audio_transcript.delta":
        case "response.audio_transcript.delta": {
          if (dropAudio) return;
          const text = accumulate(agentText, ev.item_id, ev.delta);
          if (item?.id === ev.item_id) item.textAt = responseMs;
          events.onTranscript({ role: "agent", text, final: false });
          return;
        }
        case "response.output_audio_transcript.done":
        case "response.audio_transcript.done": {
          const text = ev.transcript || (agentText.get(ev.item_id) ?? "");
          agentText.delete(ev.item_id);
          if (dropAudio) return;
          // Sent after its audio: placed where its newest words' audio begins.
          const audioMs = item?.id === ev.item_id ? item.textAt : undefined;
          events.onTranscript({ role: "agent", text, final: true, audioMs });
          return;
        }
        case "conversation.item.input_audio_transcription.delta": {
          const text = accumulate(userText, ev.item_id, ev.delta);
          events.onTranscript({ role: "user", text, final: false });
          return;
        }
        case "conversation.item.input_audio_transcription.completed":
          userText.delete(ev.item_id);
          events.onTranscript({
            role: "user",
            text: ev.transcript,
            final: true,
          });
          return;
        case "conversation.item.input_audio_transcription.failed":
          events.onError({
            code: "stt_failed",
            fatal: false,
            message: "input transcription failed",
          });
          return;
        case "input_audio_buffer.speech_started":
          // The user talks over the avatar: while a response is generated, or while
          // its audio may still be playing (the media plane knows; it answers with
          // `interrupt` and what was heard, which truncates the item).
          if (current !== null && !dropAudio) {
            dropAudio = true;
            link.send({ type: "response.cancel" });
          }
          if (latest !== null && !(item?.truncated)) events.onBargeIn?.();
          return;
        case "response.done": {
          const r = ev.response;
          const id = r.id ?? current;
          if (r.status === "failed" && !errored) {
            link.turnError(
              errorText(r.status_details?.error?.message, "response failed"),
            );
          }
          if (id === current) current = null;
          if (id !== null) events.onResponseEnd(id);
          return;
        }
        case "error": {
          const e = ev.error;
          if (e.code && BENIGN_ERRORS.has(e.code)) return;
          const message = errorText(e.message || e.code || e.type);
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
      messages: VENDOR_A_MESSAGES,
      onMessage,
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
      interrupt: (cut) => cutResponse(cut),
    });
  };
}
