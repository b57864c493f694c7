/**
 * A portrait's contact sheet: the prepared portrait and the viseme sheet on top, then
 * 20 frames of the decoded clip: the p/b/m frames with the most teeth showing, the
 * deepest frame of each blink, and frames spread over the rest of the clip (labelled
 * with their phoneme, or `listen` while the user speaks, or `idle`).
 */
import type { RgbFrame } from "./measure.ts";
import { Sheet, type Square, tile } from "./picture.ts";
import type { Row, Seen } from "./row.ts";
import type { SheetTile } from "./sheet.ts";
import type { Speech } from "./speech.ts";

/** Tile side, px. */
export const TILE = 160;
const COLS = 10;

/** Writes the contact sheet to `file` (PNG). */
export async function contactSheet(
  file: string,
  photo: RgbFrame,
  sq: Square,
  tiles: SheetTile[],
  seen: Seen[],
  speech: Speech,
  row: Row,
  listenS: number,
): Promise<void> {
  const sheet = new Sheet(COLS * TILE, 4 * TILE + 28);
  const whole = { x: 0, y: 0, side: Math.min(photo.width, photo.height) };
  sheet.put(0, 0, 2 * TILE, tile(photo, whole, 2 * TILE), "prepared");
  tiles.forEach((t, k) => {
    const x = (2 + k % 8) * TILE, y = Math.floor(k / 8) * TILE;
    sheet.put(x, y, TILE, tile(t.rgb, sq, TILE), t.label);
  });
  const label = (s: Seen) =>
    s.u >= 0 && s.u < speech.labels.length
      ? speech.labels[s.u]
      : s.pts < listenS
      ? "listen"
      : "idle";
  const pick = new Set<Seen>();
  const pp = seen.filter((s) => s.face && label(s) === "PP")
    .sort((a, b) => b.teeth - a.teeth);
  for (const s of pp.slice(0, 6)) pick.add(s);
  // The deepest frame of each blink (the fewest iris pixels), four at most.
  let run: Seen[] = [];
  for (const s of [...seen, null]) {
    if (s?.blink) run.push(s);
    else if (run.length) {
      if (pick.size < 10) {
        pick.add(run.reduce((a, b) => a.iris <= b.iris ? a : b));
      }
      run = [];
    }
  }
  // The rest spread evenly over the whole clip.
  const step = Math.max(1, Math.floor(seen.length / (2 * COLS - pick.size)));
  for (let k = 0; pick.size < 2 * COLS && k < seen.length; k += step) {
    pick.add(seen[k]);
  }
  [...pick].sort((a, b) => a.pts - b.pts).slice(0, 2 * COLS).forEach(
    (s, k) => {
      const tag = s.blink ? `blink ${s.iris.toFixed(0)}pct` : label(s);
      const x = (k % COLS) * TILE, y = (2 + Math.floor(k / COLS)) * TILE;
      sheet.put(x, y, TILE, s.tile, `${s.pts.toFixed(2)}s ${tag}`);
    },
  );
  const caption = [
    row.name,
    `pbm shut ${row.pp_shut_share}`,
    `pbm teeth p95 ${row.pp_teeth_p95_pct}pct`,
    `idle teeth ${row.idle_teeth_p50_pct}pct`,
    `blink iris ${row.sheet_blink_iris_pct}pct (open ${row.sheet_open_iris_pct}pct)`,
    `talk yaw/pitch/roll ${row.talk_yaw_deg}/${row.talk_pitch_deg}/${row.talk_roll_deg} deg`,
    `listen move ${row.listen_move_px}px`,
  ].join("   ");
  await sheet.write(file, caption);
}
