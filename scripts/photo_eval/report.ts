/** The evaluation's table: one row per portrait, as Markdown and as JSON. */
import { type Row, ROW_KEYS } from "./row.ts";

/** Short column heads of the Markdown table, in `ROW_KEYS` order. */
const HEADS: Record<keyof Row, string> = {
  name: "portrait",
  status: "status",
  photo_teeth_pct: "photo teeth %",
  sheet_rest_teeth_pct: "rest teeth %",
  sheet_pp_teeth_pct: "PP teeth %",
  shut_teeth_p95_pct: "shut teeth p95 %",
  pp_frames: "p/b/m frames",
  rest_gap: "rest gap",
  pp_shut_share: "p/b/m shut",
  pp_teeth_p95_pct: "p/b/m teeth p95 %",
  idle_teeth_p50_pct: "idle teeth p50 %",
  sheet_open_iris_pct: "open iris %",
  sheet_blink_iris_pct: "blink iris %",
  clip_blinks: "clip blinks",
  clip_blink_iris_p50_pct: "clip blink iris %",
  talk_yaw_deg: "talk yaw °",
  talk_pitch_deg: "talk pitch °",
  talk_roll_deg: "talk roll °",
  idle_move_px: "idle move px",
  listen_move_px: "listen move px",
  listen_pitch_deg: "listen pitch °",
  idle_roll_deg: "idle roll °",
  open_corr: "opening r",
  av_p95_ms: "A/V offset p95 ms",
  av_onsets: "onsets",
  idle_ssim_p50: "idle SSIM",
  paint_p95_ms: "paint p95 ms",
  mesh_missed: "no mesh",
};

/** The table as Markdown, with a median row over the portraits that were rendered. */
export function markdown(rows: Row[]): string {
  const cell = (v: unknown) => v === null || v === undefined ? "–" : String(v);
  const lines = [
    `| ${ROW_KEYS.map((k) => HEADS[k]).join(" | ")} |`,
    `|${ROW_KEYS.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${ROW_KEYS.map((k) => cell(r[k])).join(" | ")} |`),
  ];
  const ok = rows.filter((r) => r.status === "ok");
  if (ok.length > 1) {
    const median = ROW_KEYS.map((k) => {
      if (k === "name") return `**median of ${ok.length}**`;
      const xs = ok.map((r) => r[k]).filter((v): v is number =>
        typeof v === "number"
      ).sort((a, b) => a - b);
      return xs.length ? String(xs[Math.floor((xs.length - 1) / 2)]) : "";
    });
    lines.push(`| ${median.join(" | ")} |`);
  }
  return lines.join("\n") + "\n";
}

/**
 * Writes `table.md` (with `note` under it: times depend on the machine's load) and
 * `table.json` into `out`.
 */
export async function writeTable(
  out: string,
  rows: Row[],
  note: string,
): Promise<void> {
  await Deno.writeTextFile(`${out}/table.md`, `${markdown(rows)}\n${note}\n`);
  await Deno.writeTextFile(
    `${out}/table.json`,
    JSON.stringify(rows, null, 2) + "\n",
  );
}
