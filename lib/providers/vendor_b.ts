/**
 * The `vendor_b` adapter. SPEC pins only the credentials (`access_token`, `agent_id`),
 * not the wire protocol, so this adapter speaks a documented assumption (docs/providers.md,
 * "vendor_b"): JSON over WebSocket at the configured endpoint, `Authorization: Bearer
 * <access_token>` on the upgrade, `{type:"start", agent_id, input_audio}` first,
 * `{type:"ready", output_audio}` back, PCM16LE audio both ways as binary frames (or
 * base64 `{type:"audio", audio}` from the agent), `text`, `interrupt`, `end`,
 * `response.start`/`response.end`, `transcript`, `error`. Swapping in the real protocol
 * means replacing this module only.
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
import type { EngineFactory, ProviderDeps } from "./port.ts";
import { base64ToPcm, bytesToPcm, pcmToBytes } from "./resample.ts";

/** Rate of the user audio this adapter sends. */
export const VENDOR_B_INPUT_RATE = 16000;

/** The vendor_b engine factory. */
export function createVendorBEngine(deps: ProviderDeps): EngineFactory {
  return async (options) => {
    const credentials = credentialsFor(options.credentials, "vendor_b");
    const url = parseUrl(
      deps.config.providerEndpoints.vendorBUrl,
      "provider endpoint invalid",
    );
    const link = new EngineLink(deps, options, "vendor_b", VENDOR_B_INPUT_RATE);
    const { events } = link;
    let dropAudio = false;

    const audio = (pcm: Int16Array) => {
      if (!link.ready || dropAudio || pcm.length === 0) return;
      events.onAgentAudio(pcm, link.agentRate);
    };

    const onEvent = (ev: Json) => {
      switch (ev.type) {
        case "ready": {
          if (link.ready) return;
          const rate = obj(ev.output_audio).sample_rate;
          if (!Number.isInteger(rate) || (rate as number) < 8000) {
            link.fail(
              "provider sent no valid output sample rate",
              "provider protocol error",
              { code: "tts_failed", closeReason: "protocol error" },
            );
            return;
          }
          link.markReady(rate as number);
          return;
        }
        case "response.start":
          dropAudio = false;
          events.onResponseStart(str(ev.id));
          return;
        case "audio":
          try {
            audio(base64ToPcm(str(ev.audio)));
          } catch {
            // Not base64: ignored like any unusable frame.
          }
          return;
        case "response.end":
          events.onResponseEnd(str(ev.id));
          return;
        case "transcript":
          if (ev.role !== "user" && ev.role !== "agent") return;
          events.onTranscript({
            role: ev.role,
            text: str(ev.text),
            final: ev.final !== false,
          });
          return;
        case "error": {
          const message = errorText(ev.message);
          if (ev.fatal === true) link.fail(message, "provider error");
          else link.turnError(message);
          return;
        }
        default:
          return;
      }
    };

    return await link.open({
      url,
      headers: { authorization: `Bearer ${credentials.access_token}` },
      hello: {
        type: "start",
        agent_id: credentials.agent_id,
        input_audio: {
          encoding: "pcm_s16le",
          sample_rate: VENDOR_B_INPUT_RATE,
        },
      },
      onEvent,
      onBinary: (bytes) => audio(bytesToPcm(bytes)),
      sendAudio: (pcm) => link.sendBinary(pcmToBytes(pcm)),
      sendText: (text) => link.send({ type: "text", text }),
      interrupt: () => {
        dropAudio = true;
        link.send({ type: "interrupt" });
      },
      endMessage: { type: "end" },
    });
  };
}
