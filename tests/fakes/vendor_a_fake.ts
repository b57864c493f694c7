/**
 * A fake OpenAI Realtime API (GA, `vendor_a_realtime`) on real wss. Its messages are
 * the SDK's own types (`openai` `resources/realtime`, type-only): every server event it
 * sends is built as a `RealtimeServerEvent`, and every client event the adapter sends is
 * checked by a schema that must produce the SDK's type for it (`satisfies`), so a shape
 * that drifts from the vendor's fails `deno check`. A client event that breaks its
 * schema, or an unknown type, is recorded in `problems()`.
 *
 * Behaviour: bearer check on the upgrade, `session.created` on open, `session.updated`
 * for `session.update`, decoded sample count of `input_audio_buffer.append`, and
 * responses to `response.create` chosen by the last user text: `fail` → an error event
 * and a failed response, `long` → audio until `response.cancel`, `story` → 4 s of tone
 * at once (far faster than real time) with its transcript, `response.done`, and 1.5 s
 * later `input_audio_buffer.speech_started` (the user talks over the avatar still
 * playing it), anything else → two audio deltas, a transcript and `response.done`.
 * Like the API, it answers `response.cancel` without a response in progress and a
 * truncate past the audio it sent with an error.
 */
import { z } from "zod";
import type {
  ConversationItemCreateEvent,
  ConversationItemTruncateEvent,
  InputAudioBufferAppendEvent,
  RealtimeServerEvent,
  ResponseCancelEvent,
  ResponseCreateEvent,
  SessionUpdateEvent,
} from "openai/resources/realtime/realtime";
import { base64ToPcm, pcmToBase64 } from "../../lib/providers/resample.ts";
import {
  type FakePeer,
  type FakeWs,
  type Json,
  startFakeWs,
} from "./fake_ws.ts";

const RATE = 24000;
/** How long after `story`'s `response.done` the user starts talking. */
export const STORY_BARGE_IN_MS = 1500;
/** The length of `story`'s answer. */
export const STORY_MS = 4000;

const pcmFormat = z.object({
  type: z.literal("audio/pcm").optional(),
  rate: z.literal(24000).optional(),
});

/** The client events the adapter may send, each producing the SDK's type. */
const CLIENT_EVENTS = {
  "session.update": z.object({
    type: z.literal("session.update"),
    session: z.object({
      type: z.literal("realtime"),
      output_modalities: z.array(z.enum(["text", "audio"])).optional(),
      audio: z.object({
        input: z.object({ format: pcmFormat }).optional(),
        output: z.object({ format: pcmFormat }).optional(),
      }).optional(),
    }),
  }) satisfies z.ZodType<SessionUpdateEvent>,
  "input_audio_buffer.append": z.object({
    type: z.literal("input_audio_buffer.append"),
    audio: z.string(),
  }) satisfies z.ZodType<InputAudioBufferAppendEvent>,
  "conversation.item.create": z.object({
    type: z.literal("conversation.item.create"),
    item: z.object({
      type: z.literal("message"),
      role: z.literal("user"),
      content: z.array(
        z.object({ type: z.literal("input_text"), text: z.string() }),
      ),
    }),
  }) satisfies z.ZodType<ConversationItemCreateEvent>,
  "response.create": z.object({
    type: z.literal("response.create"),
  }) satisfies z.ZodType<ResponseCreateEvent>,
  "response.cancel": z.object({
    type: z.literal("response.cancel"),
    response_id: z.string().optional(),
  }) satisfies z.ZodType<ResponseCancelEvent>,
  "conversation.item.truncate": z.object({
    type: z.literal("conversation.item.truncate"),
    item_id: z.string(),
    content_index: z.literal(0),
    audio_end_ms: z.int().min(0),
  }) satisfies z.ZodType<ConversationItemTruncateEvent>,
};

type ClientType = keyof typeof CLIENT_EVENTS;
type ClientEvent = { [K in ClientType]: z.output<typeof CLIENT_EVENTS[K]> }[
  ClientType
];

/** A client event checked against its schema, or a description of what is wrong. */
export function checkClientEvent(msg: Json): ClientEvent | string {
  const type = String(msg.type);
  const schema = CLIENT_EVENTS[type as ClientType];
  if (!schema) return `unknown client event ${type}`;
  const parsed = schema.safeParse(msg);
  return parsed.success ? parsed.data : `malformed ${type}`;
}

export interface VendorAFake extends FakeWs {
  /** Samples received through `input_audio_buffer.append`. */
  appendedSamples(): number;
  /** Client events that broke the SDK's shape (should stay empty). */
  problems(): string[];
}

/** `ms` of a 440 Hz tone at 24 kHz, base64 PCM16 in chunks of 100 ms. */
function toneChunks(ms: number): string[] {
  const n = Math.round((ms * RATE) / 1000);
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    pcm[i] = Math.round(12000 * Math.sin((2 * Math.PI * 440 * i) / RATE));
  }
  const out: string[] = [];
  for (let i = 0; i < n; i += RATE / 10) {
    out.push(pcmToBase64(pcm.subarray(i, i + RATE / 10)));
  }
  return out;
}

/** Starts the fake; point `vendorARealtimeUrl` at `.url`. */
export function startVendorAFake(secret: string): VendorAFake {
  let appended = 0;
  let lastText = "";
  let n = 0;
  let events = 0;
  let open: string | null = null;
  const problems: string[] = [];
  /** Audio sent per item (ms), for the truncate check. */
  const itemMs = new Map<string, number>();
  const send = (peer: FakePeer, ev: RealtimeServerEvent) =>
    peer.send(ev as unknown as Json);
  const eventId = () => `event_${++events}`;
  const delta = (
    peer: FakePeer,
    id: string,
    audio = pcmToBase64(new Int16Array(480)),
  ) => {
    const item = `item-${id}`;
    itemMs.set(
      item,
      (itemMs.get(item) ?? 0) + (base64ToPcm(audio).length * 1000) / RATE,
    );
    send(peer, {
      type: "response.output_audio.delta",
      event_id: eventId(),
      response_id: id,
      item_id: item,
      output_index: 0,
      content_index: 0,
      delta: audio,
    });
  };
  const transcript = (peer: FakePeer, id: string, parts: string[]) => {
    for (const part of parts) {
      send(peer, {
        type: "response.output_audio_transcript.delta",
        event_id: eventId(),
        response_id: id,
        item_id: `item-${id}`,
        output_index: 0,
        content_index: 0,
        delta: part,
      });
    }
    send(peer, {
      type: "response.output_audio_transcript.done",
      event_id: eventId(),
      response_id: id,
      item_id: `item-${id}`,
      output_index: 0,
      content_index: 0,
      transcript: parts.join(""),
    });
  };
  const done = (
    peer: FakePeer,
    id: string,
    status: "completed" | "cancelled" | "failed",
    message?: string,
  ) =>
    send(peer, {
      type: "response.done",
      event_id: eventId(),
      response: {
        id,
        object: "realtime.response",
        status,
        ...(message
          ? {
            status_details: {
              type: "failed" as const,
              error: { type: "server_error", code: "server_error" },
            },
          }
          : {}),
      },
    });
  const error = (peer: FakePeer, type: string, code: string, message: string) =>
    send(peer, {
      type: "error",
      event_id: eventId(),
      error: { type, code, message },
    });

  const onEvent = (peer: FakePeer, ev: ClientEvent) => {
    switch (ev.type) {
      case "session.update":
        send(peer, {
          type: "session.updated",
          event_id: eventId(),
          session: { type: "realtime" },
        });
        return;
      case "input_audio_buffer.append":
        appended += base64ToPcm(ev.audio).length;
        return;
      case "conversation.item.create":
        lastText = ev.item.content[0]?.text ?? "";
        return;
      case "response.create": {
        const id = `resp_${++n}`;
        send(peer, {
          type: "response.created",
          event_id: eventId(),
          response: { id, object: "realtime.response", status: "in_progress" },
        });
        if (lastText === "fail") {
          error(peer, "server_error", "server_error", "model overloaded");
          done(peer, id, "failed", "model overloaded");
        } else if (lastText === "long") {
          open = id;
          delta(peer, id);
        } else if (lastText === "story") {
          for (const chunk of toneChunks(STORY_MS)) delta(peer, id, chunk);
          transcript(peer, id, ["once upon ", "a time"]);
          done(peer, id, "completed");
          setTimeout(() =>
            send(peer, {
              type: "input_audio_buffer.speech_started",
              event_id: eventId(),
              audio_start_ms: 0,
              item_id: "item_user_1",
            }), STORY_BARGE_IN_MS);
        } else {
          delta(peer, id);
          delta(peer, id);
          transcript(peer, id, ["you said ", lastText]);
          done(peer, id, "completed");
        }
        return;
      }
      case "response.cancel":
        if (open) {
          delta(peer, open); // in flight: the adapter drops it
          done(peer, open, "cancelled");
          open = null;
        } else {
          error(
            peer,
            "invalid_request_error",
            "response_cancel_not_active",
            "Cancellation failed: no active response found",
          );
        }
        return;
      case "conversation.item.truncate": {
        const sent = itemMs.get(ev.item_id);
        if (sent === undefined) {
          error(
            peer,
            "invalid_request_error",
            "item_truncate_invalid_item_id",
            "Item not found",
          );
        } else if (ev.audio_end_ms > sent) {
          problems.push("truncate past the audio sent");
          error(
            peer,
            "invalid_request_error",
            "invalid_value",
            "audio_end_ms is greater than the audio duration",
          );
        } else {
          send(peer, {
            type: "conversation.item.truncated",
            event_id: eventId(),
            item_id: ev.item_id,
            content_index: 0,
            audio_end_ms: ev.audio_end_ms,
          });
        }
        return;
      }
    }
  };

  const fake = startFakeWs("/v1/realtime", {
    refuse: (req) => {
      const url = new URL(req.url);
      if (url.searchParams.has("model")) {
        return new Response("the model is bound into the client secret", {
          status: 400,
        });
      }
      return req.headers.get("authorization") === `Bearer ${secret}` &&
          !req.headers.has("openai-beta")
        ? undefined
        : new Response("bad key", { status: 401 });
    },
    onOpen: (peer) =>
      send(peer, {
        type: "session.created",
        event_id: eventId(),
        session: { type: "realtime" },
      }),
    onJson(peer, msg: Json) {
      const ev = checkClientEvent(msg);
      if (typeof ev === "string") problems.push(ev);
      else onEvent(peer, ev);
    },
  });
  return Object.assign(fake, {
    appendedSamples: () => appended,
    problems: () => [...problems],
  });
}
