/**
 * What the built-in renderer reads back from its encoder's fMP4 output: the init
 * segment's tracks and MIME type, whether the first media segment suits MediaSource,
 * and which pushes of agent audio a segment delivered (for the audio-latency stats).
 */
import { type InitTrack, parseFragment, parseInit } from "./mp4_parse.ts";
import { STREAM_RATE } from "./voice.ts";

/** The audio track of a stream's init segment. */
export interface AudioTrack {
  id: number;
  timescale: number;
}

/** Pushed audio waiting to show up in a segment: stream sample position, push time. */
export interface WaitingPush {
  pos: number;
  at: number;
}

/** Audio-latency samples kept (the newest). */
const MAX_LATENCY_SAMPLES = 1000;

/**
 * Reads an init segment: its MIME type and track ids. Throws when it is unreadable or has
 * no `mvex` (so it cannot start a fragmented stream).
 */
export function readInit(
  bytes: Uint8Array,
): {
  mime: string;
  videoTrackId: number;
  audioTrack: AudioTrack | null;
  tracks: InitTrack[];
} {
  const info = parseInit(bytes);
  if (!info.hasMvex) throw new Error("init segment without mvex");
  const audio = info.tracks.find((t) => t.kind === "audio");
  return {
    mime: info.mime,
    videoTrackId: info.tracks.find((t) => t.kind === "video")?.trackId ?? 0,
    audioTrack: audio
      ? { id: audio.trackId, timescale: audio.timescale }
      : null,
    tracks: info.tracks,
  };
}

/** Why a stream's first segment is unusable for MediaSource, or null when it is fine. */
export function segmentProblem(
  segment: Uint8Array,
  videoTrackId: number,
): string | null {
  try {
    const { tracks } = parseFragment(segment);
    if (tracks.some((t) => !t.defaultBaseIsMoof || t.hasBaseDataOffset)) {
      return "fragment tfhd is not default-base-is-moof";
    }
    const video = tracks.find((t) => t.trackId === videoTrackId);
    if (video && !video.firstSampleSync) {
      return "stream does not start on a keyframe";
    }
    return null;
  } catch (err) {
    return `unreadable fragment: ${err instanceof Error ? err.message : err}`;
  }
}

/**
 * Settles the pushes `segment` delivered: each `waiting` push whose first sample is
 * within the audio sent so far (the stream's audio time is the input's: ./muxer.ts
 * drops AAC's priming) leaves the list, and its push-to-segment
 * time (ms, by `now`) joins `latency`, which keeps the newest 1000, and goes to
 * `observe`.
 */
export function settleDelivered(
  segment: Uint8Array,
  track: AudioTrack,
  waiting: WaitingPush[],
  latency: number[],
  now: () => number,
  observe?: (ms: number) => void,
): void {
  const t = parseFragment(segment).tracks.find((x) => x.trackId === track.id);
  if (!t) return;
  const end = (t.baseDecodeTime + t.duration) * STREAM_RATE / track.timescale;
  const at = now();
  while (waiting.length > 0 && waiting[0].pos < end) {
    const w = waiting.shift()!;
    latency.push(at - w.at);
    if (latency.length > MAX_LATENCY_SAMPLES) latency.shift();
    observe?.(at - w.at);
  }
}
