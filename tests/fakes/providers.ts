/**
 * The four provider fakes side by side, for tests and the engine fuzzer that drive every
 * provider the same way: how to start each fake, the credentials and create body it
 * accepts, the endpoint it stands for (adapter deps or the service's env), a well-formed
 * example of every engine → service message type (the templates garbage is made from),
 * which fields of each the adapter types (a `{"toString":0}` there makes the frame
 * invalid), and a "marker" message that produces a known event (a sync point: every frame
 * sent before it was handled when its event arrives). Paths into a message:
 * ./json_paths.ts.
 */
import type {
  ProviderCredentials,
  ProviderDeps,
  ProviderType,
} from "../../lib/ports/providers.ts";
import { pcmToBase64 } from "../../lib/providers/resample.ts";
import { startEcepFake } from "./ecep_engine_fake.ts";
import type { FakeWs, Json, RecordedEvents } from "./fake_ws.ts";
import { startVendorAFake } from "./vendor_a_fake.ts";
import { startVendorBFake } from "./vendor_b_fake.ts";
import { startVendorCFake } from "./vendor_c_fake.ts";

export const FAKE_ENGINE_KEY = "fake-engine-key-77d1c0";
export const FAKE_VENDOR_A_SECRET = "ek_fake_vendor_a_secret_5e1b";
export const FAKE_VENDOR_B_TOKEN = "fake-vendor-b-token-90aa";

type Endpoints = ProviderDeps["config"]["providerEndpoints"];

/** A well-formed message and the dotted paths of the fields its schema types. */
export interface Template {
  msg: Json;
  /** Paths where `{"toString":0}` breaks the schema (`type` is always one). */
  typed: string[];
}

export interface ProviderKit {
  type: ProviderType;
  fake: FakeWs;
  /** The field naming a message's type: `type` unless given (vendor_b: `event`). */
  key?: "event";
  credentials: ProviderCredentials;
  /** The create body's `provider_config` value for this provider. */
  config: Json;
  /** Adapter deps endpoints pointing at the fake. */
  endpoints: Partial<Endpoints>;
  /** Service env pointing at the fake. */
  env: Record<string, string>;
  /** Whether binary frames carry agent audio in this protocol. */
  binaryAudio: boolean;
  templates: Template[];
  /** A message whose user transcript is `text` (the sync point). */
  marker(text: string): Json;
  /**
   * Whether the marker of `text` was handled, for a protocol without transcripts;
   * by default, a user transcript of `text` arrived.
   */
  markerSeen?(events: RecordedEvents, text: string): boolean;
}

/** The field naming the type of `kit`'s messages. */
export const typeKey = (kit: ProviderKit): string => kit.key ?? "type";

const b64 = (samples: number) => pcmToBase64(new Int16Array(samples));

function ecep(): ProviderKit {
  const fake = startEcepFake({ key: FAKE_ENGINE_KEY });
  return {
    type: "external_engine",
    fake,
    credentials: {
      type: "external_engine",
      url: fake.url,
      auth_headers: { "x-engine-key": FAKE_ENGINE_KEY },
      user_sample_rate: 16000,
    },
    config: {
      url: fake.url,
      auth_headers: { "x-engine-key": FAKE_ENGINE_KEY },
    },
    endpoints: {},
    env: {},
    binaryAudio: true,
    templates: [
      {
        msg: {
          type: "session.ready",
          agent_audio: { encoding: "pcm_s16le", sample_rate: 16000 },
        },
        typed: [
          "agent_audio",
          "agent_audio.encoding",
          "agent_audio.sample_rate",
        ],
      },
      {
        msg: { type: "response.start", response_id: "r1" },
        typed: ["response_id"],
      },
      {
        msg: { type: "response.end", response_id: "r1" },
        typed: ["response_id"],
      },
      {
        msg: { type: "transcript", role: "agent", text: "hi", final: true },
        typed: ["role", "text", "final"],
      },
      {
        msg: { type: "error", message: "llm hiccup", fatal: false },
        typed: ["message", "fatal"],
      },
    ],
    marker: (text) => ({ type: "transcript", role: "user", text, final: true }),
  };
}

function vendorA(): ProviderKit {
  const fake = startVendorAFake(FAKE_VENDOR_A_SECRET);
  const audioDelta = (type: string): Template => ({
    msg: {
      type,
      response_id: "resp_1",
      item_id: "item_1",
      content_index: 0,
      delta: b64(240),
    },
    typed: ["response_id", "item_id", "delta"],
  });
  const textDelta = (type: string): Template => ({
    msg: { type, item_id: "item_1", delta: "hel" },
    typed: ["item_id", "delta"],
  });
  const textDone = (type: string): Template => ({
    msg: { type, item_id: "item_1", transcript: "hello" },
    typed: ["item_id", "transcript"],
  });
  return {
    type: "vendor_a_realtime",
    fake,
    credentials: {
      type: "vendor_a_realtime",
      client_secret: FAKE_VENDOR_A_SECRET,
    },
    config: { client_secret: FAKE_VENDOR_A_SECRET },
    endpoints: { vendorARealtimeUrl: fake.url },
    env: { VENDOR_A_REALTIME_URL: fake.url },
    binaryAudio: false,
    templates: [
      { msg: { type: "session.created", session: { id: "s" } }, typed: [] },
      {
        msg: { type: "response.created", response: { id: "resp_1" } },
        // Every field of the SDK's response object is optional.
        typed: ["response.id"],
      },
      audioDelta("response.output_audio.delta"),
      audioDelta("response.audio.delta"),
      textDelta("response.output_audio_transcript.delta"),
      textDelta("response.audio_transcript.delta"),
      textDone("response.output_audio_transcript.done"),
      textDone("response.audio_transcript.done"),
      textDelta("conversation.item.input_audio_transcription.delta"),
      {
        msg: {
          type: "conversation.item.input_audio_transcription.completed",
          item_id: "item_u",
          transcript: "hello",
        },
        typed: ["item_id", "transcript"],
      },
      {
        msg: {
          type: "conversation.item.input_audio_transcription.failed",
          item_id: "item_u",
          error: { message: "asr down" },
        },
        typed: [],
      },
      {
        msg: {
          type: "input_audio_buffer.speech_started",
          audio_start_ms: 10,
          item_id: "item_u",
        },
        typed: [],
      },
      {
        msg: {
          type: "response.done",
          response: {
            id: "resp_1",
            status: "failed",
            status_details: { error: { message: "model overloaded" } },
          },
        },
        typed: [
          "response.id",
          "response.status",
          "response.status_details.error.message",
        ],
      },
      {
        msg: {
          type: "error",
          error: { type: "server_error", code: "x", message: "oops" },
        },
        typed: ["error.type", "error.code", "error.message"],
      },
    ],
    marker: (text) => ({
      type: "conversation.item.input_audio_transcription.completed",
      item_id: "item_m",
      transcript: text,
    }),
  };
}

function vendorB(): ProviderKit {
  const fake = startVendorBFake({
    tokens: [FAKE_VENDOR_B_TOKEN],
    agents: ["agent-b"],
  });
  const s = { stream_id: "st_1" };
  let markers = 0;
  return {
    type: "vendor_b",
    key: "event",
    fake,
    credentials: {
      type: "vendor_b",
      access_token: FAKE_VENDOR_B_TOKEN,
      agent_id: "agent-b",
    },
    config: { access_token: FAKE_VENDOR_B_TOKEN, agent_id: "agent-b" },
    endpoints: { vendorBUrl: fake.url },
    env: { VENDOR_B_URL: fake.url },
    binaryAudio: false,
    templates: [
      {
        msg: { event: "ack", ...s, config: { input_format: "pcm_16000" } },
        typed: ["stream_id", "config.input_format"],
      },
      {
        msg: { event: "media_output", ...s, media: { payload: b64(200) } },
        typed: ["stream_id", "media", "media.payload"],
      },
      { msg: { event: "clear", ...s }, typed: ["stream_id"] },
      { msg: { event: "dtmf", ...s, dtmf: "5" }, typed: ["stream_id", "dtmf"] },
      {
        msg: { event: "custom", ...s, metadata: { agent_state: "x" } },
        typed: ["stream_id"],
      },
    ],
    // No transcripts in this protocol: the agent's `clear` (a barge-in) is the marker.
    marker: () => {
      markers++;
      return { event: "clear", ...s };
    },
    markerSeen: (events) => events.bargeIns >= markers,
  };
}

function vendorC(): ProviderKit {
  const fake = startVendorCFake();
  return {
    type: "vendor_c",
    fake,
    credentials: { type: "vendor_c", agent_id: "public-agent" },
    config: { agent_id: "public-agent" },
    endpoints: { vendorCUrl: fake.url },
    env: { VENDOR_C_URL: fake.url },
    binaryAudio: false,
    templates: [
      {
        msg: {
          type: "conversation_initiation_metadata",
          conversation_initiation_metadata_event: {
            conversation_id: "c",
            agent_output_audio_format: "pcm_16000",
            user_input_audio_format: "pcm_16000",
          },
        },
        typed: [
          "conversation_initiation_metadata_event.agent_output_audio_format",
          "conversation_initiation_metadata_event.user_input_audio_format",
        ],
      },
      {
        msg: {
          type: "audio",
          audio_event: { audio_base_64: b64(200), event_id: 1_000_000 },
        },
        typed: [
          "audio_event",
          "audio_event.audio_base_64",
          "audio_event.event_id",
        ],
      },
      {
        msg: {
          type: "agent_response",
          agent_response_event: { agent_response: "hi", event_id: 1 },
        },
        typed: [
          "agent_response_event",
          "agent_response_event.agent_response",
          "agent_response_event.event_id",
        ],
      },
      {
        msg: {
          type: "agent_response_correction",
          agent_response_correction_event: {
            original_agent_response: "hi there",
            corrected_agent_response: "hi",
            event_id: 1,
          },
        },
        typed: [
          "agent_response_correction_event",
          "agent_response_correction_event.corrected_agent_response",
          "agent_response_correction_event.event_id",
        ],
      },
      {
        msg: {
          type: "client_tool_call",
          client_tool_call: {
            tool_name: "open_door",
            tool_call_id: "call_1",
            parameters: {},
            event_id: 1,
          },
        },
        typed: [
          "client_tool_call",
          "client_tool_call.tool_name",
          "client_tool_call.tool_call_id",
        ],
      },
      {
        msg: {
          type: "user_transcript",
          user_transcription_event: { user_transcript: "hello" },
        },
        typed: [
          "user_transcription_event",
          "user_transcription_event.user_transcript",
        ],
      },
      {
        msg: { type: "interruption", interruption_event: { event_id: 1 } },
        typed: ["interruption_event.event_id"],
      },
      {
        msg: { type: "ping", ping_event: { event_id: 3, ping_ms: 5 } },
        typed: ["ping_event", "ping_event.event_id"],
      },
      {
        msg: {
          type: "error",
          error_event: { code: 1011, message: "stt down", reason: "asr" },
        },
        typed: ["error_event.message", "error_event.reason"],
      },
    ],
    marker: (text) => ({
      type: "user_transcript",
      user_transcription_event: { user_transcript: text },
    }),
  };
}

/** Starts the fake of `type` and describes how to drive it. */
export function startProviderKit(type: ProviderType): ProviderKit {
  switch (type) {
    case "external_engine":
      return ecep();
    case "vendor_a_realtime":
      return vendorA();
    case "vendor_b":
      return vendorB();
    case "vendor_c":
      return vendorC();
  }
}
