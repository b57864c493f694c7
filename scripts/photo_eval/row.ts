/** The shapes of the evaluation's results: a decoded frame's findings, a table row. */
import type { FoundFace } from "../../lib/photo/models.ts";

/** What one decoded frame of a clip showed. */
export interface Seen {
  /** Frame of the speech it shows (negative: before it). */
  u: number;
  /** Presentation time, s. */
  pts: number;
  face: FoundFace | null;
  /** Inner-lip gap over face height (measure.ts `lipGap`). */
  gap: number;
  /** Lid gap over eye width (measure.ts `eyeOpening`). */
  eyes: number;
  /** Teeth-like pixels inside the outer lips, %. */
  teeth: number;
  /** Iris-dark pixels inside the open eyes' outline, %. */
  iris: number;
  /** Set once the clip is read: the eyes are closing or closed. */
  blink: boolean;
  /** Luma SSIM against the prepared portrait, mouth and eyes left out. */
  ssim: number;
  /** The face's square, for the contact sheet. */
  tile: Uint8Array;
}

/** One row of the table; `null` where a measure had no frames to be taken on. */
export interface Row {
  name: string;
  status: string;
  photo_teeth_pct: number | null;
  sheet_rest_teeth_pct: number | null;
  sheet_pp_teeth_pct: number | null;
  shut_teeth_p95_pct: number | null;
  pp_frames: number | null;
  /** The painted rest's inner-lip gap as the mesh reads it (shut: ≤ 0.02 mostly). */
  rest_gap: number | null;
  pp_shut_share: number | null;
  pp_teeth_p95_pct: number | null;
  idle_teeth_p50_pct: number | null;
  sheet_open_iris_pct: number | null;
  sheet_blink_iris_pct: number | null;
  clip_blinks: number | null;
  clip_blink_iris_p50_pct: number | null;
  talk_yaw_deg: number | null;
  talk_pitch_deg: number | null;
  talk_roll_deg: number | null;
  idle_move_px: number | null;
  idle_roll_deg: number | null;
  listen_move_px: number | null;
  listen_pitch_deg: number | null;
  open_corr: number | null;
  av_p95_ms: number | null;
  av_onsets: string | null;
  idle_ssim_p50: number | null;
  paint_p95_ms: number | null;
  mesh_missed: number | null;
}

/** The table's columns, in order. */
export const ROW_KEYS: Array<keyof Row> = [
  "name",
  "status",
  "photo_teeth_pct",
  "sheet_rest_teeth_pct",
  "sheet_pp_teeth_pct",
  "pp_frames",
  "rest_gap",
  "pp_shut_share",
  "shut_teeth_p95_pct",
  "pp_teeth_p95_pct",
  "idle_teeth_p50_pct",
  "sheet_open_iris_pct",
  "sheet_blink_iris_pct",
  "clip_blinks",
  "clip_blink_iris_p50_pct",
  "talk_yaw_deg",
  "talk_pitch_deg",
  "talk_roll_deg",
  "idle_move_px",
  "idle_roll_deg",
  "listen_move_px",
  "listen_pitch_deg",
  "open_corr",
  "av_p95_ms",
  "av_onsets",
  "idle_ssim_p50",
  "paint_p95_ms",
  "mesh_missed",
];

/** The row of a portrait that produced no clip (refused, or failed). */
export function emptyRow(name: string, status: string): Row {
  const row: Record<string, unknown> = { name, status };
  for (const k of ROW_KEYS) if (!(k in row)) row[k] = null;
  return row as unknown as Row;
}
