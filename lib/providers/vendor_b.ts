/**
 * The `vendor_b` adapter: the Cartesia agents WebSocket (DECISIONS 7b; the vendor's
 * reference: https://docs.cartesia.ai/line/integrations/web-calls). The endpoint is
 * `VENDOR_B_URL` + `/` + the URL-encoded agent id; the upgrade carries `Authorization:
 * Bearer <access_token>` (a token minted with the `agent` grant) and `Cartesia-Version`.
 * JSON both ways, keyed by `event`: `start` out first (the stream's `input_format`),
 * `ack` back (ready); user audio as `media_input`, agent audio as `media_output` (base64
 * PCM16LE at the stream's format, both ways); `clear` is the agent's own barge-in;
 * `dtmf` and `custom` have no place in the engine port and are ignored (counted).
 *
 * What the protocol lacks, and how this adapter copes (docs/providers.md):
 * - No response boundaries: a response opens with its first audio and ends once the
 *   audio received so far would have played out, plus `responseIdleMs` without more.
 * - No typed turns: the connection says `textTurns: false` and the media plane refuses
 *   a browser `text` with the non-fatal `invalid_message`.
 * - No cancel or truncate: a browser interrupt cuts the avatar locally and drops the
 *   rest of that answer (audio until `responseIdleMs` of quiet, or the agent's `clear`).
 * - The vendor closes a connection idle for 30 s (code 1000, which would read as the
 *   agent ending the call): whenever nothing went up for `keepAliveMs`, a chunk of
 *   silence does. Deno's client cannot send ping frames, which the vendor also accepts.
 */
import { z } from "zod";
import { credentialsFor, EngineLink, parseUrl } from "./adapter.ts";
import { engineId, type Message, MessageSet } from "./frames.ts";
import {
  type EngineFactory,
  EngineStartError,
  type ProviderDeps,
  type ResponseCut,
} from "../ports/providers.ts";
import { pcmToBase64 } from "./resample.ts";
import { pcmFormatRate } from "./vendor_c.ts";

/** The `Cartesia-Version` the vendor's reference names for the agents WebSocket. */
export const VENDOR_B_VERSION = "2025-04-16";
/** The stream format asked for in `start`; user audio is resampled to it. */
export const VENDOR_B_INPUT_FORMAT = "pcm_16000";
/**
 * Samples per `media_input`: 20 ms at 16 kHz, a JSON frame under 1 KiB (frames of 4–16
 * KiB stall Deno's client ~44 ms each on Nagle, DECISIONS 9).
 */
export const VENDOR_B_CHUNK_SAMPLES = 320;

/** The keep-alive: one chunk of silence (20 ms at 16 kHz, less at higher rates). */
const SILENCE = pcmToBase64(new Int16Array(VENDOR_B_CHUNK_SAMPLES));

const streamId = () => engineId().optional();

/**
 * The agent events this adapter knows, a schema each, keyed by `event`. Other events
 * are ignored uncounted (the API adds events); a known one with a wrong-typed field is
 * invalid (counted).
 */
export const VENDOR_B_MESSAGES = new MessageSet(
  {
    "ack": z.object({
      stream_id: streamId(),
      config: z.object({ input_format: z.string().max(64).optional() })
        .nullish(),
    }),
    "media_output": z.object({
      stream_id: streamId(),
      media: z.object({ payload: z.string() }),
    }),
    "clear": z.object({ stream_id: streamId() }),
    "dtmf": z.object({ stream_id: streamId(), dtmf: z.string().max(16) }),
    "custom": z.object({
      stream_id: streamId(),
      metadata: z.record(z.string(), z.unknown()).nullish(),
    }),
  },
  "ignore",
  "event",
);

export interface VendorBOptions {
  /** A response ends this long after its audio would have played out, without more. */
  responseIdleMs?: number;
  /** Silence goes up after this long without any message to the vendor. */
  keepAliveMs?: number;
}

/**
 * The agent's WebSocket URL: `endpoint` + `/` + the URL-encoded `agentId`. An id the URL
 * parser would resolve as a dot segment (`.`, `..`) is a misconfiguration.
 */
export function vendorBUrl(endpoint: string, agentId: string): URL {
  if (/^\.{1,2}$/.test(agentId)) {
    throw new EngineStartError("misconfigured", "agent_id is invalid");
  }
  const url = parseUrl(endpoint, "provider endpoint invalid");
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/${
    encodeURIComponent(agentId)
  }`;
  return url;
}

/** The vendor_b engine factory. */
export function createVendorBEngine(
  deps: ProviderDeps,
  opts: VendorBOptions = {},
): EngineFactory {
  const idleMs = opts.responseIdleMs ?? 1000;
  const keepAliveMs = opts.keepAliveMs ?? 10_000;
  const now = deps.now ?? Date.now;
  return async (options) => {
    const credentials = credentialsFor(options.credentials, "vendor_b");
    const url = vendorBUrl(
      deps.config.providerEndpoints.vendorBUrl,
      credentials.agent_id,
    );
    const link = new EngineLink(
      deps,
      options,
      "vendor_b",
      pcmFormatRate(VENDOR_B_INPUT_FORMAT)!,
    );
    const { events } = link;
    let stream: string = crypto.randomUUID();
    let response: string | null = null;
    let responses = 0;
    /** When the open response's audio, played from its arrival on, would end. */
    let playedOutAt = 0;
    /** After a browser interrupt: the rest of the cut answer is dropped. */
    let dropping = false;
    let cancelEnd = () => {};
    let cancelQuiet = () => {};
    /** When anything last went up (ms, `now()`). */
    let sentAt = now();
    let ignored = 0;

    const send = (event: Record<string, unknown>): void => {
      if (link.send({ ...event, stream_id: stream })) sentAt = now();
    };

    const endResponse = () => {
      cancelEnd();
      if (response === null) return;
      const id = response;
      response = null;
      events.onResponseEnd(id);
    };

    const onAudio = (pcm: Int16Array) => {
      if (dropping) {
        // Still the cut answer: wait for a quiet gap before taking audio again.
        cancelQuiet();
        cancelQuiet = link.later(() => dropping = false, idleMs);
        return;
      }
      const t = now();
      if (response === null) {
        response = `b${++responses}`;
        playedOutAt = t;
        events.onResponseStart(response);
      }
      playedOutAt = Math.max(playedOutAt, t) +
        pcm.length * 1000 / link.agentRate;
      events.onAgentAudio(pcm, link.agentRate);
      cancelEnd();
      cancelEnd = link.later(endResponse, playedOutAt - t + idleMs);
    };

    // Measured from the last message, not on a fixed tick: a tick that skipped
    // because something had just gone up left the next silence up to two periods
    // after it.
    const keepAlive = () => {
      const quiet = now() - sentAt;
      if (quiet >= keepAliveMs) {
        send({
          event: "media_input",
          media: { payload: SILENCE },
        });
        link.later(keepAlive, keepAliveMs);
      } else {
        link.later(keepAlive, keepAliveMs - quiet);
      }
    };

    const ignore = (event: string) => {
      // No place in the engine port: counted, logged at debug on powers of two.
      ignored++;
      if ((ignored & (ignored - 1)) === 0) {
        deps.log.debug?.("vendor event ignored", {
          provider: "vendor_b",
          session_id: options.sessionId,
          event,
          ignored_events: ignored,
        });
      }
    };

    const onMessage = (ev: Message<typeof VENDOR_B_MESSAGES>) => {
      switch (ev.event) {
        case "ack": {
          if (link.ready) return;
          if (ev.stream_id) stream = ev.stream_id;
          const rate = pcmFormatRate(
            ev.config?.input_format ?? VENDOR_B_INPUT_FORMAT,
          );
          if (rate === null) return unsupported();
          link.markReady(rate, rate);
          link.later(keepAlive, keepAliveMs);
          return;
        }
        case "media_output": {
          if (!link.ready) return;
          const pcm = link.base64Audio(ev.media.payload);
          if (pcm && pcm.length > 0) onAudio(pcm);
          return;
        }
        case "clear":
          // The agent's barge-in: the media plane cuts what is queued (turn.interrupted
          // with played_ms) while the response is still open, then it ends.
          dropping = false;
          cancelQuiet();
          events.onBargeIn?.();
          endResponse();
          return;
        case "dtmf":
        case "custom":
          return ignore(ev.event);
      }
    };

    const unsupported = () =>
      link.fail("agent audio format is not PCM", "unsupported audio format", {
        code: "tts_failed",
      });

    return await link.open({
      url,
      headers: {
        authorization: `Bearer ${credentials.access_token}`,
        "cartesia-version": VENDOR_B_VERSION,
      },
      hello: {
        event: "start",
        stream_id: stream,
        config: { input_format: VENDOR_B_INPUT_FORMAT },
      },
      messages: VENDOR_B_MESSAGES,
      onMessage,
      onMalformed: (event) => {
        if (event === "ack" && !link.ready) unsupported();
      },
      sendAudio: (pcm) => {
        for (let i = 0; i < pcm.length; i += VENDOR_B_CHUNK_SAMPLES) {
          send({
            event: "media_input",
            media: {
              payload: pcmToBase64(pcm.subarray(i, i + VENDOR_B_CHUNK_SAMPLES)),
            },
          });
        }
      },
      // No sendText: the agents WebSocket takes no typed turns.
      interrupt: (cut?: ResponseCut) => {
        // A cut of a response that already ended (the agent's clear, or its audio
        // played out) leaves nothing to drop; no message exists to tell the agent.
        if (response === null || (cut && cut.responseId !== response)) return;
        endResponse();
        dropping = true;
        cancelQuiet();
        cancelQuiet = link.later(() => dropping = false, idleMs);
      },
    });
  };
}
