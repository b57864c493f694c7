/**
 * The SFU port over Janus's streaming plugin (DECISIONS 11). Mountpoints are `rtp`,
 * private, with H.264 (pt 96, packetization-mode 1, `bufferkf`) and Opus (pt 111), every
 * medium on `port: 0` / `rtcpport: 0` bound to the ingest host (loopback when Janus is
 * on this host), and SRTP-keyed (DECISIONS 11): a packet from anyone but the holder's
 * encoder fails its authentication and is dropped, wherever the ports can be reached
 * from. A mountpoint's `secret`, `pin` and SRTP key are HMACs of its random id under
 * the plugin's `admin_key`: unguessable without that key, never stored, and any
 * instance sharing the key can destroy a mountpoint a dead instance left behind. Each viewer gets its own Janus session,
 * whose long poll carries its events; closing a viewer destroys that session.
 */
import { z } from "zod";
import { JanusHttp, type JanusMessage } from "./janus_http.ts";
import {
  type IceCandidate,
  type ListedMountpoint,
  type Mountpoint,
  SfuError,
  type SfuPort,
  type Viewer,
  type ViewerEvents,
} from "../ports/sfu.ts";
import {
  defaultIngestHost,
  mountpointCredential,
  mountpointSrtpKey,
} from "./ingest.ts";

export interface JanusSfuOptions {
  /** Janus API URL (`SFU_URL`). */
  url: string;
  /** A Janus API token (`SFU_API_SECRET`). */
  token: string;
  /** The streaming plugin's `admin_key` (`SFU_API_KEY`). */
  adminKey: string;
  /** Address the ingest ports bind to; default the SFU_URL host when an IP, else 127.0.0.1. */
  ingestHost?: string;
}

/** How long Janus may take to answer an asynchronous request (watch, start). */
const EVENT_TIMEOUT_MS = 10_000;
/** Streaming plugin: no such mountpoint (destroy of an absent one is a success). */
const NO_SUCH_MOUNTPOINT = 455;
/** Streaming plugin: the mountpoint could not be created (no port free). */
const CANT_CREATE = 456;

const pluginErrorSchema = z.looseObject({
  error_code: z.number(),
  error: z.string(),
});
const createdSchema = z.looseObject({
  streaming: z.literal("created"),
  stream: z.looseObject({
    id: z.number().int(),
    host: z.string().optional(),
    ports: z.array(z.looseObject({
      type: z.enum(["audio", "video", "data"]),
      port: z.number().int().min(1).max(65535),
    })),
  }),
});
const listSchema = z.looseObject({
  streaming: z.literal("list"),
  list: z.array(z.looseObject({
    id: z.number().int(),
    description: z.string().optional(),
  })),
});
const destroyedSchema = z.looseObject({ streaming: z.literal("destroyed") });
const watchEventSchema = z.looseObject({
  streaming: z.literal("event"),
  result: z.looseObject({ status: z.string() }).optional(),
});

/** The plugin's answer to a message, or an `SfuError` for a plugin error. */
function pluginData(
  msg: JanusMessage,
  full: "negotiation" | "full" = "negotiation",
): Record<string, unknown> {
  const data = msg.plugindata?.data;
  if (!data) throw new SfuError("connection", "Janus answered without data");
  const err = pluginErrorSchema.safeParse(data);
  if (err.success) {
    throw new SfuError(
      err.data.error_code === CANT_CREATE ? full : "negotiation",
      `Janus streaming error ${err.data.error_code}: ${
        err.data.error.slice(0, 200)
      }`,
    );
  }
  return data;
}

function parsed<T>(schema: z.ZodType<T>, data: unknown): T {
  const r = schema.safeParse(data);
  if (!r.success) {
    throw new SfuError("connection", "Janus answered an unexpected shape");
  }
  return r.data;
}

/** The Janus adapter of the SFU port. */
export function createJanusSfu(options: JanusSfuOptions): SfuPort {
  const http = new JanusHttp(options.url, options.token);
  const ingestHost = options.ingestHost ?? defaultIngestHost(options.url);

  /** Runs `fn` on a fresh session + streaming handle, then destroys the session. */
  async function withHandle<T>(
    signal: AbortSignal | undefined,
    fn: (path: string) => Promise<T>,
  ): Promise<T> {
    const sid = await http.createSession(signal);
    try {
      const hid = await http.attach(sid, signal);
      return await fn(`/${sid}/${hid}`);
    } finally {
      await http.destroySession(sid).catch(() => {});
    }
  }

  const message = (
    path: string,
    body: Record<string, unknown>,
    signal?: AbortSignal,
  ) => http.request(path, { janus: "message", body }, signal);

  return {
    async health(signal) {
      const sid = await http.createSession(signal);
      await http.destroySession(sid, signal).catch(() => {});
    },

    createMountpoint(label, signal) {
      return withHandle(signal, async (path) => {
        const id = 1 + Math.floor(Math.random() * (2 ** 52 - 1));
        const media = (type: "video" | "audio") => ({
          type,
          mid: type === "video" ? "v" : "a",
          port: 0,
          rtcpport: 0,
          iface: ingestHost,
          ...(type === "video"
            ? {
              pt: 96,
              codec: "h264",
              fmtp: "profile-level-id=42e01f;packetization-mode=1",
              bufferkf: true,
            }
            : { pt: 111, codec: "opus" }),
        });
        const srtp = await mountpointSrtpKey(options.adminKey, id);
        const msg = await message(path, {
          request: "create",
          admin_key: options.adminKey,
          type: "rtp",
          id,
          description: label,
          is_private: true,
          permanent: false,
          secret: await mountpointCredential(options.adminKey, "secret", id),
          pin: await mountpointCredential(options.adminKey, "pin", id),
          // SRTP with a 80-bit tag (AES_CM_128_HMAC_SHA1_80), as the encoder sends it.
          srtpsuite: 80,
          srtpcrypto: srtp,
          media: [media("video"), media("audio")],
        }, signal);
        const created = parsed(createdSchema, pluginData(msg, "full"));
        const port = (type: string) =>
          created.stream.ports.find((p) => p.type === type)?.port;
        const videoPort = port("video");
        const audioPort = port("audio");
        if (!videoPort || !audioPort) {
          throw new SfuError("negotiation", "Janus bound no ingest ports");
        }
        return {
          id: created.stream.id,
          host: created.stream.host ?? ingestHost,
          videoPort,
          audioPort,
          srtp,
        } satisfies Mountpoint;
      });
    },

    destroyMountpoint(id, signal) {
      return withHandle(signal, async (path) => {
        const msg = await message(path, {
          request: "destroy",
          id,
          secret: await mountpointCredential(options.adminKey, "secret", id),
          permanent: false,
        }, signal);
        const data = msg.plugindata?.data;
        const err = pluginErrorSchema.safeParse(data);
        if (err.success && err.data.error_code === NO_SUCH_MOUNTPOINT) return;
        parsed(destroyedSchema, pluginData(msg));
      });
    },

    listMountpoints(signal) {
      return withHandle(signal, async (path) => {
        const msg = await message(path, {
          request: "list",
          admin_key: options.adminKey,
        }, signal);
        return parsed(listSchema, pluginData(msg)).list.map((m) => ({
          id: m.id,
          label: m.description ?? "",
        } satisfies ListedMountpoint));
      });
    },

    watch(mountpointId, events, signal) {
      return openViewer(http, options.adminKey, mountpointId, events, signal);
    },
  };
}

/** A viewer: its own Janus session and handle, its events off the session's long poll. */
async function openViewer(
  http: JanusHttp,
  adminKey: string,
  mountpointId: number,
  events: ViewerEvents,
  signal?: AbortSignal,
): Promise<Viewer> {
  const sid = await http.createSession(signal);
  const pollAbort = new AbortController();
  const pending = new Map<string, (msg: JanusMessage) => void>();
  let closed = false;
  let closedReason = "";
  const closeWith = (reason: string, notify = true) => {
    if (closed) return;
    closed = true;
    closedReason = reason;
    pollAbort.abort();
    for (const [, resolve] of pending) {
      resolve({ janus: "closed" });
    }
    pending.clear();
    if (notify) events.onClosed?.(reason);
  };

  const dispatch = (msg: JanusMessage) => {
    if (msg.transaction && pending.has(msg.transaction)) {
      if (msg.janus === "ack") return;
      pending.get(msg.transaction)!(msg);
      pending.delete(msg.transaction);
      return;
    }
    switch (msg.janus) {
      case "webrtcup":
        events.onMediaFlowing?.();
        return;
      case "trickle":
        if (msg.candidate?.candidate !== undefined) {
          events.onCandidate?.({
            candidate: msg.candidate.candidate,
            sdpMid: msg.candidate.sdpMid ?? null,
            sdpMLineIndex: msg.candidate.sdpMLineIndex ?? null,
          });
        }
        return;
      case "hangup":
        return closeWith(`hangup: ${(msg.reason ?? "").slice(0, 100)}`);
      case "detached":
      case "timeout":
        return closeWith(msg.janus);
      case "event": {
        const data = watchEventSchema.safeParse(msg.plugindata?.data);
        if (data.success && data.data.result?.status === "stopped") {
          closeWith("stopped");
        }
        return;
      }
    }
  };

  void (async () => {
    while (!closed) {
      try {
        for (const msg of await http.poll(sid, pollAbort.signal)) {
          dispatch(msg);
        }
      } catch {
        closeWith("sfu unreachable");
      }
    }
  })();

  /** Sends a plugin message and waits for its asynchronous answer. */
  const asyncMessage = async (
    hid: number,
    body: Record<string, unknown>,
    jsep?: { type: "answer"; sdp: string },
    sig?: AbortSignal,
  ): Promise<JanusMessage> => {
    const transaction = crypto.randomUUID();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answer = new Promise<JanusMessage>((resolve) => {
      pending.set(transaction, resolve);
      timer = setTimeout(
        () => resolve({ janus: "timeout-waiting" }),
        EVENT_TIMEOUT_MS,
      );
    });
    try {
      await http.request(
        `/${sid}/${hid}`,
        { janus: "message", body, ...(jsep ? { jsep } : {}) },
        sig,
        transaction,
      );
      const msg = await answer;
      if (msg.janus === "closed") {
        throw new SfuError("negotiation", `viewer closed (${closedReason})`);
      }
      if (msg.janus === "timeout-waiting") {
        throw new SfuError("connection", "Janus did not answer in time");
      }
      return msg;
    } finally {
      clearTimeout(timer);
      pending.delete(transaction);
    }
  };

  try {
    const hid = await http.attach(sid, signal);
    const watched = await asyncMessage(
      hid,
      {
        request: "watch",
        id: mountpointId,
        pin: await mountpointCredential(adminKey, "pin", mountpointId),
      },
      undefined,
      signal,
    );
    pluginData(watched);
    if (watched.jsep?.type !== "offer") {
      throw new SfuError("negotiation", "Janus sent no offer");
    }
    const offer = watched.jsep.sdp;
    return {
      offer,
      async answer(sdp, sig) {
        const started = await asyncMessage(
          hid,
          { request: "start" },
          { type: "answer", sdp },
          sig,
        );
        pluginData(started);
      },
      async trickle(candidate: IceCandidate | null) {
        if (closed) return;
        await http.request(`/${sid}/${hid}`, {
          janus: "trickle",
          candidate: candidate ?? { completed: true },
        });
      },
      async close() {
        const wasClosed = closed;
        closeWith("closed", false);
        if (!wasClosed) await http.destroySession(sid).catch(() => {});
      },
    };
  } catch (err) {
    closed = true;
    pollAbort.abort();
    await http.destroySession(sid).catch(() => {});
    throw err;
  }
}
