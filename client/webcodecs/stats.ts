/**
 * What WebCodecs playback (./player.ts) counts and measures, as `player.stats.webcodecs`
 * shows it (and the viewer report sends, ../viewer_report.ts).
 */
import { type AudioOutStats, NO_AUDIO_STATS } from "./audio_out.ts";
import type { LiveBufferStats } from "../mse.ts";

export interface WebCodecsStats extends AudioOutStats {
  streams: number;
  /** The current stream's audio codec (`mp4a.40.2`, `opus`), null before one. */
  audioCodec: string | null;
  segments: number;
  framesDecoded: number;
  framesDrawn: number;
  /** Decoded frames never drawn: late behind the audio clock (a jump, a burst). */
  framesSkipped: number;
  /** The playback clock: media time heard now (ms), null before audio plays. */
  clockMs: number | null;
  /** The timestamp of the frame on the canvas (ms), null before the first. */
  shownMs: number | null;
  /** Decoded audio not yet heard: the newest media minus the clock (ms). */
  latencyMs: number;
  /** How long a segment's audio waits to be heard once it lands (../arrival_wait.ts). */
  arrivalWaitMs: number | null;
}

/** The stats of a player that decodes nothing with WebCodecs. */
export const NO_WEBCODECS: WebCodecsStats = {
  streams: 0,
  audioCodec: null,
  segments: 0,
  framesDecoded: 0,
  framesDrawn: 0,
  framesSkipped: 0,
  clockMs: null,
  shownMs: null,
  latencyMs: 0,
  arrivalWaitMs: null,
  ...NO_AUDIO_STATS,
};

/** WebCodecs playback's counters as the MSE path's (`player.stats` at its top level). */
export function asBufferStats(w: WebCodecsStats): LiveBufferStats {
  return {
    streams: w.streams,
    segmentsAppended: w.segments,
    segmentsDropped: 0,
    liveEdgeJumps: w.liveEdgeJumps,
    gapSkips: 0,
    arrivalWaitMs: w.arrivalWaitMs,
  };
}
