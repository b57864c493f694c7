/**
 * A fake vendor_b agent endpoint speaking the documented assumption (docs/providers.md):
 * bearer check on the upgrade, `start` → `ready`, binary user audio counted, `text` →
 * a response (`fail` → a non-fatal error mid-turn, `long` → audio until `interrupt`,
 * else binary and base64 audio plus transcripts), `end` → close unless `stubborn`.
 */
import { pcmToBase64 } from "../../lib/providers/resample.ts";
import { type FakeWs, type Json, startFakeWs } from "./fake_ws.ts";

export interface VendorBFakeOptions {
  token: string;
  stubborn?: boolean;
}

/** Starts the fake; point `vendorBUrl` at `.url`. */
export function startVendorBFake(options: VendorBFakeOptions): FakeWs {
  let n = 0;
  let open: string | null = null;
  return startFakeWs("/v1/agent", {
    refuse: (req) =>
      req.headers.get("authorization") === `Bearer ${options.token}`
        ? undefined
        : new Response("forbidden", { status: 403 }),
    onJson(peer, msg: Json) {
      switch (msg.type) {
        case "start":
          peer.send({
            type: "ready",
            output_audio: { encoding: "pcm_s16le", sample_rate: 22050 },
          });
          return;
        case "text": {
          const id = `b${++n}`;
          peer.send({ type: "response.start", id });
          if (msg.text === "fail") {
            peer.send({ type: "error", message: "llm timeout", fatal: false });
            peer.send({ type: "response.end", id });
          } else if (msg.text === "long") {
            open = id;
            peer.send(new Uint8Array(1000));
          } else {
            peer.send({
              type: "transcript",
              role: "user",
              text: msg.text,
              final: true,
            });
            peer.send(new Uint8Array(1000));
            peer.send({
              type: "audio",
              audio: pcmToBase64(new Int16Array(500)),
            });
            peer.send({
              type: "transcript",
              role: "agent",
              text: `reply to ${msg.text}`,
              final: true,
            });
            peer.send({ type: "response.end", id });
          }
          return;
        }
        case "interrupt":
          if (open) {
            peer.send(new Uint8Array(1000));
            peer.send({ type: "response.end", id: open });
            open = null;
          }
          return;
        case "end":
          if (!options.stubborn) peer.close(1000);
          return;
      }
    },
  });
}
