/**
 * A fake vendor_a realtime API on real wss: bearer check on the upgrade,
 * `session.created` on open, `session.updated` for `session.update`, decoded sample count
 * of `input_audio_buffer.append`, and responses to `response.create` chosen by the last
 * user text: `fail` → an error event and a failed response, `long` → audio until
 * `response.cancel`, anything else → two audio deltas, a transcript and `response.done`.
 */
import { base64ToPcm, pcmToBase64 } from "../../lib/providers/resample.ts";
import { type FakeWs, type Json, startFakeWs } from "./fake_ws.ts";

export interface VendorAFake extends FakeWs {
  /** Samples received through `input_audio_buffer.append`. */
  appendedSamples(): number;
}

/** Starts the fake; point `vendorARealtimeUrl` at `.url`. */
export function startVendorAFake(secret: string): VendorAFake {
  let appended = 0;
  let lastText = "";
  let n = 0;
  let open: string | null = null;
  const delta = (id: string) => ({
    type: "response.output_audio.delta",
    response_id: id,
    item_id: `item-${id}`,
    content_index: 0,
    delta: pcmToBase64(new Int16Array(480)),
  });
  const fake = startFakeWs("/v1/realtime", {
    refuse: (req) =>
      req.headers.get("authorization") === `Bearer ${secret}`
        ? undefined
        : new Response("bad key", { status: 401 }),
    onOpen: (peer) =>
      peer.send({ type: "session.created", session: { id: "sess_1" } }),
    onJson(peer, msg: Json) {
      switch (msg.type) {
        case "session.update":
          peer.send({ type: "session.updated", session: msg.session });
          return;
        case "input_audio_buffer.append":
          appended += base64ToPcm(String(msg.audio)).length;
          return;
        case "conversation.item.create": {
          const item = msg.item as { content: { text: string }[] };
          lastText = item.content[0].text;
          return;
        }
        case "response.create": {
          const id = `resp_${++n}`;
          peer.send({ type: "response.created", response: { id } });
          if (lastText === "fail") {
            peer.send({
              type: "error",
              error: { type: "server_error", message: "model overloaded" },
            });
            peer.send({
              type: "response.done",
              response: {
                id,
                status: "failed",
                status_details: { error: { message: "model overloaded" } },
              },
            });
          } else if (lastText === "long") {
            open = id;
            peer.send(delta(id));
          } else {
            peer.send(delta(id));
            peer.send({
              type: "response.output_audio_transcript.delta",
              item_id: `item-${id}`,
              delta: "you said ",
            });
            peer.send(delta(id));
            peer.send({
              type: "response.output_audio_transcript.delta",
              item_id: `item-${id}`,
              delta: lastText,
            });
            peer.send({
              type: "response.output_audio_transcript.done",
              item_id: `item-${id}`,
              transcript: `you said ${lastText}`,
            });
            peer.send({
              type: "response.done",
              response: { id, status: "completed" },
            });
          }
          return;
        }
        case "response.cancel":
          if (open) {
            peer.send(delta(open)); // in flight: the adapter drops it
            peer.send({
              type: "response.done",
              response: { id: open, status: "cancelled" },
            });
            open = null;
          } else {
            peer.send({
              type: "error",
              error: {
                code: "response_cancel_not_active",
                message: "no active response",
              },
            });
          }
          return;
      }
    },
  });
  return Object.assign(fake, { appendedSamples: () => appended });
}
