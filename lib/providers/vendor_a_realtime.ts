/**
 * The `vendor_a_realtime` adapter: a realtime speech-to-speech WebSocket API with JSON
 * events (session.update, input_audio_buffer.append, conversation.item.create,
 * response.create/cancel, conversation.item.truncate; server events response.*,
 * conversation.item.input_audio_transcription.*, input_audio_buffer.speech_started,
 * error). Audio both ways is base64 PCM16 mono at 24 kHz. The customer's ephemeral
 * `client_secret` is the bearer token of the upgrade. See docs/providers.md.
 */
import {
  type EngineConnection,
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
  turnErrorCodeFor,
} from "./port.ts";
import { base64ToPcm, pcmToBase64, StreamResampler } from "./resample.ts";
import { CloseTracker, connectWs, gracefulEnd } from "./ws_client.ts";

/** The API's PCM rate, both directions. */
export const VENDOR_A_RATE = 24000;
/** Samples per append message: keeps each JSON frame under 1 KiB (Nagle, see ws_client). */
const APPEND_SAMPLES = 360;
/** Errors that only say a cancel/truncate raced the end of a response. */
const BENIGN_ERRORS = new Set([
  "response_cancel_not_active",
  "item_truncate_invalid_item_id",
]);

type Json = Record<string, unknown>;
const str = (v: unknown): string => typeof v === "string" ? v : "";

/** The vendor_a realtime engine factory. */
export function createVendorAEngine(deps: ProviderDeps): EngineFactory {
  const now = deps.now ?? Date.now;
  return async ({ sessionId, credentials, events, signal }) => {
    if (credentials.type !== "vendor_a_realtime") {
      throw new EngineStartError("misconfigured", "credentials mismatch");
    }
    let url: URL;
    try {
      url = new URL(deps.config.providerEndpoints.vendorARealtimeUrl);
    } catch {
      throw new EngineStartError("misconfigured", "provider endpoint invalid");
    }
    const tracker = new CloseTracker(events.onClose);
    let ready = false;
    /** The response being generated, until response.done. */
    let current: string | null = null;
    let dropAudio = false;
    /** An error was already reported for the current response. */
    let errored = false;
    let audioItem: { id: string; ms: number; firstAt: number } | null = null;
    const agentText = new Map<string, string>();
    const userText = new Map<string, string>();

    const client = await connectWs(url, {
      headers: { authorization: `Bearer ${credentials.client_secret}` },
      connectTimeoutMs: deps.connectTimeoutMs ?? 10_000,
      signal,
      onMessage: (data) => {
        if (typeof data === "string") onEvent(data);
      },
      onClose: () => tracker.socketClosed(),
    });

    const cutResponse = () => {
      if (current === null) return;
      dropAudio = true;
      client.sendJson({ type: "response.cancel" });
      if (audioItem) {
        const played = Math.min(audioItem.ms, now() - audioItem.firstAt);
        client.sendJson({
          type: "conversation.item.truncate",
          item_id: audioItem.id,
          content_index: 0,
          audio_end_ms: Math.max(0, Math.floor(played)),
        });
      }
    };

    function onEvent(text: string) {
      let ev: Json;
      try {
        ev = JSON.parse(text);
        if (!ev || typeof ev !== "object") return;
      } catch {
        return;
      }
      switch (ev.type) {
        case "session.created":
          if (!ready) {
            ready = true;
            events.onReady({ agentSampleRate: VENDOR_A_RATE });
          }
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
            const message = str(err.message) || "response failed";
            events.onError({
              code: turnErrorCodeFor(message),
              fatal: false,
              message,
            });
          }
          if (id === current) current = null;
          events.onResponseEnd(id);
          return;
        }
        case "error": {
          const err = (ev.error ?? {}) as Json;
          if (BENIGN_ERRORS.has(str(err.code))) return;
          const message = str(err.message).slice(0, 500) || "provider error";
          if (!ready) {
            events.onError({ code: "llm_failed", fatal: true, message });
            tracker.report(false, "provider error before ready");
            client.close(1011, "provider error");
            return;
          }
          errored = current !== null;
          events.onError({
            code: turnErrorCodeFor(message),
            fatal: false,
            message,
          });
          return;
        }
        default:
          return;
      }
    }

    client.sendJson({
      type: "session.update",
      session: {
        type: "realtime",
        output_modalities: ["audio"],
        audio: {
          input: { format: { type: "audio/pcm", rate: VENDOR_A_RATE } },
          output: { format: { type: "audio/pcm", rate: VENDOR_A_RATE } },
        },
      },
    });
    deps.log.info("engine connected", {
      provider: "vendor_a",
      session_id: sessionId,
    });

    const resampler = new StreamResampler(VENDOR_A_RATE);
    const conn: EngineConnection = {
      sendUserAudio(pcm, sampleRate) {
        if (!ready || tracker.done || tracker.ending) return;
        const out = resampler.push(pcm, sampleRate);
        for (let i = 0; i < out.length; i += APPEND_SAMPLES) {
          client.sendJson({
            type: "input_audio_buffer.append",
            audio: pcmToBase64(out.subarray(i, i + APPEND_SAMPLES)),
          });
        }
      },
      sendText(text) {
        if (!ready || tracker.done) return;
        client.sendJson({
          type: "conversation.item.create",
          item: {
            type: "message",
            role: "user",
            content: [{ type: "input_text", text }],
          },
        });
        client.sendJson({ type: "response.create" });
      },
      interrupt() {
        if (tracker.done) return;
        cutResponse();
      },
      end(timeoutMs) {
        return gracefulEnd(client, tracker, timeoutMs);
      },
      close() {
        tracker.callerClosed();
        client.close(1000, "session closed");
      },
    };
    return conn;
  };
}
