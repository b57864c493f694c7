/**
 * A fake vendor_c conversational-agent socket at `/v1/convai/conversation` on real wss.
 * Accepts a public agent (`?agent_id=public-agent`), a signed URL
 * (`conversation_signature=sig-ok`) or an `xi-api-key` header; answers the initiation
 * data with metadata (`pcm_22050` out, `pcm_16000` in) and a ping; counts user audio
 * chunks; answers `user_message` by its text: `fail` → an error event, `long` → audio
 * until `user_activity`, `barge` → audio then an interruption, else a reply.
 */
import { base64ToPcm, pcmToBase64 } from "../../lib/providers/resample.ts";
import { type FakeWs, type Json, startFakeWs } from "./fake_ws.ts";

export const VENDOR_C_API_KEY = "vc-api-key-0123456789abcdef";

export interface VendorCFake extends FakeWs {
  userSamples(): number;
}

/** Starts the fake; point `vendorCUrl` at `.url`. */
export function startVendorCFake(): VendorCFake {
  let userSamples = 0;
  let eventId = 0;
  let long = false;
  const audio = (id = ++eventId) => ({
    type: "audio",
    audio_event: {
      audio_base_64: pcmToBase64(new Int16Array(400)),
      event_id: id,
    },
  });
  const fake = startFakeWs("/v1/convai/conversation", {
    refuse(req) {
      const q = new URL(req.url).searchParams;
      const ok = q.get("agent_id") === "public-agent" ||
        q.get("conversation_signature") === "sig-ok" ||
        req.headers.get("xi-api-key") === VENDOR_C_API_KEY;
      return ok ? undefined : new Response("no", { status: 403 });
    },
    onJson(peer, msg: Json) {
      if (typeof msg.user_audio_chunk === "string") {
        userSamples += base64ToPcm(msg.user_audio_chunk).length;
        return;
      }
      switch (msg.type) {
        case "conversation_initiation_client_data":
          peer.send({
            type: "conversation_initiation_metadata",
            conversation_initiation_metadata_event: {
              conversation_id: "conv_1",
              agent_output_audio_format: "pcm_22050",
              user_input_audio_format: "pcm_16000",
            },
          });
          peer.send({ type: "ping", ping_event: { event_id: 7, ping_ms: 0 } });
          return;
        case "user_message":
          if (msg.text === "fail") {
            peer.send({
              type: "error",
              error_event: { message: "speech-to-text unavailable" },
            });
          } else if (msg.text === "long") {
            long = true;
            peer.send({
              type: "agent_response",
              agent_response_event: { agent_response: "a long story" },
            });
            peer.send(audio());
          } else if (msg.text === "barge") {
            peer.send(audio());
            peer.send({
              type: "interruption",
              interruption_event: { event_id: eventId + 1 },
            });
            peer.send(audio()); // belongs to the interrupted turn: dropped
            peer.send({
              type: "user_transcript",
              user_transcription_event: { user_transcript: "wait" },
            });
          } else {
            peer.send({
              type: "agent_response",
              agent_response_event: { agent_response: `reply to ${msg.text}` },
            });
            peer.send(audio());
            peer.send(audio());
          }
          return;
        case "user_activity":
          if (long) {
            peer.send(audio()); // still in flight: dropped by the adapter
            long = false;
          }
          return;
      }
    },
  });
  return Object.assign(fake, { userSamples: () => userSamples });
}
