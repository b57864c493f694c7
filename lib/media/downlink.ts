/**
 * What goes down one browser socket from one render stream: `media.init` and the init
 * segment, then media segments as they come, never queued without bound — past
 * `MAX_SOCKET_BUFFERED_BYTES` segments are dropped (counted) and sending resumes at the
 * next one that starts on a keyframe, so the decoder never gets a fragment it cannot use.
 * JSON messages (turns, transcripts, pongs) cannot be dropped without confusing the
 * client, so a socket that has `MAX_SOCKET_JSON_BUFFERED_BYTES` queued is closed with
 * 1013 instead: the browser reconnects (a takeover) and starts afresh.
 */
import { parseFragment, parseInit } from "../render/mp4_parse.ts";
import type { ServerMessage } from "./protocol.ts";

/** Bytes a browser socket may have queued before media segments are dropped. */
export const MAX_SOCKET_BUFFERED_BYTES = 1024 * 1024;

/** The counters a downlink keeps (the live session's). */
export interface DownlinkStats {
  segmentsSent: number;
  segmentsDropped: number;
}

/**
 * Bytes a browser socket may have queued before a JSON message closes it (1013) rather
 * than queue more: the relay's limit, above the media one so media is dropped first.
 */
export const MAX_SOCKET_JSON_BUFFERED_BYTES = 4 * 1024 * 1024;

/** The close code for a browser too slow to read what it is sent ("try again later"). */
export const CLOSE_TOO_SLOW = 1013;

/** Closes `ws` with `code`; a socket already closing is left alone. */
export function closeSocket(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch { /* already closing */ }
}

/**
 * Sends a JSON message when the socket is open; never throws for a closed one. A socket
 * that does not read (over `MAX_SOCKET_JSON_BUFFERED_BYTES` queued) is closed with 1013
 * instead, so an engine's flood of transcripts cannot grow the process without bound.
 */
export function sendJson(ws: WebSocket, msg: ServerMessage): void {
  if (ws.readyState !== WebSocket.OPEN) return;
  if (ws.bufferedAmount > MAX_SOCKET_JSON_BUFFERED_BYTES) {
    closeSocket(ws, CLOSE_TOO_SLOW, "too slow");
    return;
  }
  ws.send(JSON.stringify(msg));
}

export class Downlink {
  /** Set once this stream's init segment went out. */
  initSent = false;
  #waitKeyframe = false;
  /** trex default sample flags of the stream, by track id. */
  #trexDefaults = new Map<number, number>();
  /** The stream's video track id (0 when the init has none). */
  #videoTrack = 0;

  constructor(
    private readonly ws: WebSocket,
    private readonly stats: DownlinkStats,
    /** Hears each dropped segment: `slow` (the browser's queue full), `keyframe` (waiting for one). */
    private readonly onDrop: (why: "slow" | "keyframe") => void = () => {},
  ) {}

  /**
   * Sends `media.init` (with `alpha` for a transparent avatar's stacked frames) and the
   * init segment.
   */
  init(mime: string, init: Uint8Array, alpha: "stacked" | null = null): void {
    sendJson(
      this.ws,
      alpha
        ? { type: "media.init", mime, alpha }
        : { type: "media.init", mime },
    );
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(init);
    try {
      const { tracks } = parseInit(init);
      this.#trexDefaults = new Map(
        tracks.map((t) => [t.trackId, t.defaultSampleFlags]),
      );
      this.#videoTrack = tracks.find((t) => t.kind === "video")?.trackId ?? 0;
    } catch {
      this.#trexDefaults = new Map();
      this.#videoTrack = 0;
    }
    this.#waitKeyframe = false;
    this.initSent = true;
  }

  /** Sends one media segment, or drops it for a slow browser (counted). */
  segment(segment: Uint8Array): void {
    const ws = this.ws;
    if (ws.readyState !== WebSocket.OPEN || !this.initSent) return;
    if (this.#waitKeyframe) {
      if (!this.#startsWithKeyframe(segment)) {
        this.stats.segmentsDropped++;
        this.onDrop("keyframe");
        return;
      }
      this.#waitKeyframe = false;
    }
    if (ws.bufferedAmount > MAX_SOCKET_BUFFERED_BYTES) {
      // A slow browser: drop rather than queue without bound, and resume on a keyframe.
      this.stats.segmentsDropped++;
      this.onDrop("slow");
      this.#waitKeyframe = true;
      return;
    }
    ws.send(segment);
    this.stats.segmentsSent++;
  }

  /**
   * Whether `segment` has the video and every track of it starts on a sync sample (video:
   * a keyframe). An audio-only segment is no place to resume: video after it may not be.
   */
  #startsWithKeyframe(segment: Uint8Array): boolean {
    try {
      const { tracks } = parseFragment(segment, this.#trexDefaults);
      const video = this.#videoTrack === 0 || // an init we could not read
        tracks.some((t) => t.trackId === this.#videoTrack);
      return video && tracks.length > 0 &&
        tracks.every((t) => t.firstSampleSync);
    } catch {
      return false;
    }
  }
}
