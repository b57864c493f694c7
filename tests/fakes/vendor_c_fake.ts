/**
 * A fake ElevenLabs Conversational AI socket (`vendor_c`) at `/v1/convai/conversation`
 * on real wss. Its messages are the vendor's own types (`@elevenlabs/types`, type-only):
 * every agent event it sends is built as one of them, and every client message the
 * adapter sends is checked by a schema that must produce the SDK's type (`satisfies`),
 * so a shape that drifts from the vendor's fails `deno check`. A client message that
 * breaks its schema is recorded in `problems()`.
 *
 * Accepts a public agent (`?agent_id=public-agent`), a signed URL
 * (`conversation_signature=sig-ok`) or an `xi-api-key` header; answers the initiation
 * data with metadata (`pcm_22050` out, `pcm_16000` in) and a ping; counts user audio
 * chunks. Event ids are per agent turn, as the vendor's are. Answers `user_message` by
 * its text: `fail` → an error event (its text in `reason`), `long` → a turn whose audio
 * runs until `user_activity`, `barge` → audio, an interruption, audio still in flight of
 * the interrupted turn, a correction of its text and a user transcript, `audio first` →
 * a turn whose audio comes before its text, `tool` → a `client_tool_call` and nothing
 * else until its `client_tool_result` (then a reply saying whether it failed),
 * `max duration` → the `max_duration_exceeded` error, anything else → a reply.
 */
import { z } from "zod";
import type {
  AgentResponseClientEvent,
  AgentResponseCorrectionClientEvent,
  AudioClientEvent,
  ClientToolCallClientEvent,
  ClientToolResultClientToOrchestratorEvent,
  ConversationInitiationClientToOrchestratorEvent,
  ConversationMetadata,
  ErrorClientEvent,
  Interruption,
  Ping,
  PongClientToOrchestratorEvent,
  UserActivityClientToOrchestratorEvent,
  UserAudio,
  UserMessageClientToOrchestratorEvent,
  UserTranscriptionClientEvent,
} from "@elevenlabs/types";
import { base64ToPcm, pcmToBase64 } from "../../lib/providers/resample.ts";
import {
  type FakePeer,
  type FakeWs,
  type Json,
  startFakeWs,
} from "./fake_ws.ts";

export const VENDOR_C_API_KEY = "vc-api-key-0123456789abcdef";

/** What the fake sends: the vendor's agent events. */
type AgentEvent =
  | AudioClientEvent
  | AgentResponseClientEvent
  | AgentResponseCorrectionClientEvent
  | ClientToolCallClientEvent
  | ConversationMetadata
  | ErrorClientEvent
  | Interruption
  | Ping
  | UserTranscriptionClientEvent;

/** The client messages the adapter may send, each producing the SDK's type. */
const CLIENT_MESSAGES = {
  conversation_initiation_client_data: z.object({
    type: z.literal("conversation_initiation_client_data"),
  }) satisfies z.ZodType<ConversationInitiationClientToOrchestratorEvent>,
  pong: z.object({
    type: z.literal("pong"),
    event_id: z.int(),
  }) satisfies z.ZodType<PongClientToOrchestratorEvent>,
  user_message: z.object({
    type: z.literal("user_message"),
    text: z.string(),
  }) satisfies z.ZodType<UserMessageClientToOrchestratorEvent>,
  user_activity: z.object({
    type: z.literal("user_activity"),
  }) satisfies z.ZodType<UserActivityClientToOrchestratorEvent>,
  client_tool_result: z.object({
    type: z.literal("client_tool_result"),
    tool_call_id: z.string(),
    result: z.string(),
    is_error: z.boolean(),
  }) satisfies z.ZodType<ClientToolResultClientToOrchestratorEvent>,
};
const userAudio = z.object({
  user_audio_chunk: z.string(),
}) satisfies z.ZodType<
  UserAudio
>;

type ClientType = keyof typeof CLIENT_MESSAGES;
type ClientMessage = {
  [K in ClientType]: z.output<typeof CLIENT_MESSAGES[K]>;
}[ClientType];

export interface VendorCFake extends FakeWs {
  userSamples(): number;
  /** Client messages that broke the SDK's shape (should stay empty). */
  problems(): string[];
}

/** Starts the fake; point `vendorCUrl` at `.url`. */
export function startVendorCFake(): VendorCFake {
  let userSamples = 0;
  let turn = 0;
  let long: number | null = null;
  const problems: string[] = [];
  const tools = new Map<string, number>();
  const send = (peer: FakePeer, ev: AgentEvent) =>
    peer.send(ev as unknown as Json);
  const audio = (peer: FakePeer, id: number) =>
    send(peer, {
      type: "audio",
      audio_event: {
        audio_base_64: pcmToBase64(new Int16Array(400)),
        event_id: id,
      },
    });
  const text = (peer: FakePeer, id: number, said: string) =>
    send(peer, {
      type: "agent_response",
      agent_response_event: { agent_response: said, event_id: id },
    });
  const reply = (peer: FakePeer, said: string) => {
    const id = ++turn;
    text(peer, id, said);
    audio(peer, id);
    audio(peer, id);
  };

  const onMessage = (peer: FakePeer, msg: ClientMessage) => {
    switch (msg.type) {
      case "conversation_initiation_client_data":
        send(peer, {
          type: "conversation_initiation_metadata",
          conversation_initiation_metadata_event: {
            conversation_id: "conv_1",
            agent_output_audio_format: "pcm_22050",
            user_input_audio_format: "pcm_16000",
          },
        });
        send(peer, { type: "ping", ping_event: { event_id: 7, ping_ms: 0 } });
        return;
      case "user_message":
        if (msg.text === "fail") {
          send(peer, {
            type: "error",
            error_event: {
              code: 1011,
              error_type: "asr_transcription_error",
              reason: "speech-to-text unavailable",
            },
          });
        } else if (msg.text === "max duration") {
          send(peer, {
            type: "error",
            error_event: {
              code: 1000,
              error_type: "max_duration_exceeded",
              message: "Conversation reached its maximum duration",
            },
          });
        } else if (msg.text === "long") {
          long = ++turn;
          text(peer, long, "a long story");
          audio(peer, long);
        } else if (msg.text === "audio first") {
          const id = ++turn;
          audio(peer, id);
          text(peer, id, "audio came first");
          audio(peer, id);
        } else if (msg.text === "barge") {
          const id = ++turn;
          text(peer, id, "I was saying something long");
          audio(peer, id);
          send(peer, {
            type: "interruption",
            interruption_event: { event_id: id },
          });
          audio(peer, id); // in flight of the interrupted turn: dropped
          send(peer, {
            type: "agent_response_correction",
            agent_response_correction_event: {
              original_agent_response: "I was saying something long",
              corrected_agent_response: "I was saying",
              event_id: id,
            },
          });
          send(peer, {
            type: "user_transcript",
            user_transcription_event: { user_transcript: "wait", event_id: id },
          });
        } else if (msg.text === "tool") {
          const id = ++turn;
          const call = `call_${id}`;
          tools.set(call, id);
          send(peer, {
            type: "client_tool_call",
            client_tool_call: {
              tool_name: "open_door",
              tool_call_id: call,
              parameters: { door: "front" },
              event_id: id,
            },
          });
        } else reply(peer, `reply to ${msg.text}`);
        return;
      case "client_tool_result": {
        const id = tools.get(msg.tool_call_id);
        if (id === undefined) {
          problems.push("result for an unknown tool call");
          return;
        }
        tools.delete(msg.tool_call_id);
        reply(peer, msg.is_error ? "the tool failed" : "the tool worked");
        return;
      }
      case "user_activity":
        if (long !== null) {
          audio(peer, long); // still in flight: dropped by the adapter
          long = null;
        }
        return;
      case "pong":
        return;
    }
  };

  const fake = startFakeWs("/v1/convai/conversation", {
    refuse(req) {
      const q = new URL(req.url).searchParams;
      const ok = q.get("agent_id") === "public-agent" ||
        q.get("conversation_signature") === "sig-ok" ||
        req.headers.get("xi-api-key") === VENDOR_C_API_KEY;
      return ok ? undefined : new Response("no", { status: 403 });
    },
    onJson(peer, msg: Json) {
      if ("user_audio_chunk" in msg) {
        const chunk = userAudio.safeParse(msg);
        if (chunk.success) {
          userSamples += base64ToPcm(chunk.data.user_audio_chunk).length;
        } else problems.push("malformed user_audio_chunk");
        return;
      }
      const schema = CLIENT_MESSAGES[String(msg.type) as ClientType];
      const parsed = schema?.safeParse(msg);
      if (!parsed?.success) {
        problems.push(`bad client message ${String(msg.type)}`);
        return;
      }
      onMessage(peer, parsed.data);
    },
  });
  return Object.assign(fake, {
    userSamples: () => userSamples,
    problems: () => [...problems],
  });
}
