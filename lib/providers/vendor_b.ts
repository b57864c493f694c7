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
  type EngineConnection,
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
  turnErrorCodeFor,
} from "./port.ts";
import {
  base64ToPcm,
  bytesToPcm,
  pcmToBytes,
  StreamResampler,
} from "./resample.ts";
import { CloseTracker, connectWs, gracefulEnd } from "./ws_client.ts";

/** Rate of the user audio this adapter sends. */
export const VENDOR_B_INPUT_RATE = 16000;

type Json = Record<string, unknown>;
const str = (v: unknown): string => typeof v === "string" ? v : "";
const obj = (v: unknown): Json => v && typeof v === "object" ? v as Json : {};

/** The vendor_b engine factory. */
export function createVendorBEngine(deps: ProviderDeps): EngineFactory {
  return async ({ sessionId, credentials, events, signal }) => {
    if (credentials.type !== "vendor_b") {
      throw new EngineStartError("misconfigured", "credentials mismatch");
    }
    let url: URL;
    try {
      url = new URL(deps.config.providerEndpoints.vendorBUrl);
    } catch {
      throw new EngineStartError("misconfigured", "provider endpoint invalid");
    }
    const tracker = new CloseTracker(events.onClose);
    let ready = false;
    let agentRate = 0;
    let dropAudio = false;

    const audio = (pcm: Int16Array) => {
      if (!ready || dropAudio || pcm.length === 0) return;
      events.onAgentAudio(pcm, agentRate);
    };

    const client = await connectWs(url, {
      headers: { authorization: `Bearer ${credentials.access_token}` },
      connectTimeoutMs: deps.connectTimeoutMs ?? 10_000,
      signal,
      onMessage: (data) => {
        if (typeof data !== "string") audio(bytesToPcm(data));
        else onEvent(data);
      },
      onClose: () => tracker.socketClosed(),
    });

    function onEvent(text: string) {
      let ev: Json;
      try {
        ev = obj(JSON.parse(text));
      } catch {
        return;
      }
      switch (ev.type) {
        case "ready": {
          if (ready) return;
          const rate = obj(ev.output_audio).sample_rate;
          if (!Number.isInteger(rate) || (rate as number) < 8000) {
            events.onError({
              code: "tts_failed",
              fatal: true,
              message: "provider sent no valid output sample rate",
            });
            tracker.report(false, "provider protocol error");
            client.close(1002, "protocol error");
            return;
          }
          ready = true;
          agentRate = rate as number;
          events.onReady({ agentSampleRate: agentRate });
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
          const message = str(ev.message).slice(0, 500) || "provider error";
          const fatal = ev.fatal === true;
          events.onError({ code: turnErrorCodeFor(message), fatal, message });
          if (fatal) {
            tracker.report(false, "provider error");
            client.close(1011, "provider error");
          }
          return;
        }
        default:
          return;
      }
    }

    client.sendJson({
      type: "start",
      agent_id: credentials.agent_id,
      input_audio: { encoding: "pcm_s16le", sample_rate: VENDOR_B_INPUT_RATE },
    });
    deps.log.info("engine connected", {
      provider: "vendor_b",
      session_id: sessionId,
    });

    const resampler = new StreamResampler(VENDOR_B_INPUT_RATE);
    const conn: EngineConnection = {
      sendUserAudio(pcm, sampleRate) {
        if (!ready || tracker.done || tracker.ending) return;
        const out = resampler.push(pcm, sampleRate);
        if (out.length > 0) client.sendBinary(pcmToBytes(out));
      },
      sendText(text) {
        if (!ready || tracker.done) return;
        client.sendJson({ type: "text", text });
      },
      interrupt() {
        if (tracker.done) return;
        dropAudio = true;
        client.sendJson({ type: "interrupt" });
      },
      end(timeoutMs) {
        return gracefulEnd(client, tracker, timeoutMs, { type: "end" });
      },
      close() {
        tracker.callerClosed();
        client.close(1000, "session closed");
      },
    };
    return conn;
  };
}
