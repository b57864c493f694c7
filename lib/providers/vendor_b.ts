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
import { z } from "zod";
import { credentialsFor, EngineLink, errorText, parseUrl } from "./adapter.ts";
import {
  engineId,
  errorMessageWithFatal,
  type Message,
  MessageSet,
  sampleRate,
  transcriptMessage,
} from "./frames.ts";
import type { EngineFactory, ProviderDeps } from "./port.ts";
import { pcmToBytes } from "./resample.ts";

/** Rate of the user audio this adapter sends. */
export const VENDOR_B_INPUT_RATE = 16000;

/**
 * The agent messages of the assumed protocol, a schema each. Other types are ignored
 * uncounted (a vendor protocol); a wrong-typed field makes the frame invalid.
 */
export const VENDOR_B_MESSAGES = new MessageSet({
  "ready": z.object({ output_audio: z.object({ sample_rate: sampleRate() }) }),
  "response.start": z.object({ id: engineId() }),
  "audio": z.object({ audio: z.string() }),
  "response.end": z.object({ id: engineId() }),
  "transcript": transcriptMessage(),
  "error": errorMessageWithFatal(),
}, "ignore");

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

    const audio = (pcm: Int16Array | null) => {
      if (!pcm || !link.ready || dropAudio || pcm.length === 0) return;
      events.onAgentAudio(pcm, link.agentRate);
    };

    const onMessage = (ev: Message<typeof VENDOR_B_MESSAGES>) => {
      switch (ev.type) {
        case "ready":
          if (!link.ready) link.markReady(ev.output_audio.sample_rate);
          return;
        case "response.start":
          dropAudio = false;
          events.onResponseStart(ev.id);
          return;
        case "audio":
          audio(link.base64Audio(ev.audio));
          return;
        case "response.end":
          events.onResponseEnd(ev.id);
          return;
        case "transcript":
          events.onTranscript({
            role: ev.role,
            text: ev.text,
            final: ev.final,
          });
          return;
        case "error": {
          const message = errorText(ev.message);
          if (ev.fatal) link.fail(message, "provider error");
          else link.turnError(message);
          return;
        }
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
      messages: VENDOR_B_MESSAGES,
      onMessage,
      onMalformed: (type) => {
        if (type === "ready" && !link.ready) {
          link.fail(
            "provider sent no valid output sample rate",
            "provider protocol error",
            { code: "tts_failed", closeReason: "protocol error" },
          );
        }
      },
      onAudio: audio,
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
