/**
 * `deno task photo:eval DIR [--out OUT] [--only NAME] [--seconds N]`: every JPEG or PNG
 * portrait in DIR prepared as an upload is, painted (a viseme sheet) and rendered
 * talking by a live session (real espeak-ng speech), its decoded video measured with
 * the face mesh; writes OUT/table.md, OUT/table.json, and per portrait OUT/NAME.mp4 and
 * OUT/NAME.png (a contact sheet). OUT defaults to test-output/photo-eval/. See
 * docs/photo-avatars.md, "Evaluating portraits"; the evaluation set is listed in
 * scripts/photo_eval/SOURCES.md.
 */
import { parseArgs, UsageError } from "../_args.ts";
import { closePhotoWorker } from "../../lib/photo/mod.ts";
import { evaluate } from "./evaluate.ts";
import { emptyRow, type Row } from "./row.ts";
import { markdown, writeTable } from "./report.ts";
import { makeSpeech } from "./speech.ts";

const USAGE =
  "usage: deno task photo:eval DIR [--out OUT] [--only NAME] [--seconds N]";

/**
 * The JPEG and PNG files of `dir` by name, sorted; a link to one counts (a set picked
 * out of a larger one).
 */
export async function portraitsIn(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if ((e.isFile || e.isSymlink) && /\.(jpe?g|png)$/i.test(e.name)) {
      files.push(e.name);
    }
  }
  return files.sort();
}

async function main(args: string[]): Promise<number> {
  const { positional, flags } = parseArgs(args, ["out", "only", "seconds"]);
  if (positional.length !== 1) throw new UsageError(USAGE);
  const dir = positional[0];
  const out = flags.get("out") ?? "test-output/photo-eval";
  const seconds = Number(flags.get("seconds") ?? "13");
  if (!(seconds >= 2 && seconds <= 60)) {
    throw new UsageError("--seconds must be 2 to 60");
  }
  const only = flags.get("only");
  const files = await portraitsIn(dir);
  const chosen = files.filter((f) =>
    only === undefined || f === only || f.replace(/\.[^.]+$/, "") === only
  );
  if (chosen.length === 0) throw new UsageError(`no portrait in ${dir}`);
  await Deno.mkdir(out, { recursive: true });
  const speech = makeSpeech();
  const rows: Row[] = [];
  const load = () => Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
  const note =
    `${chosen.length} portraits, ${seconds} s clips; load average ${load()} at the start`;
  try {
    for (const f of chosen) {
      const name = f.replace(/\.[^.]+$/, "");
      const t0 = performance.now();
      let row: Row;
      try {
        row = await evaluate(`${dir}/${f}`, name, speech, seconds, out);
      } catch (err) {
        row = emptyRow(name, `failed: ${(err as Error).message}`);
      }
      rows.push(row);
      console.error(
        `${name}: ${row.status} (${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s)`,
      );
      await writeTable(out, rows, `${note}, ${load()} after the last portrait`);
    }
  } finally {
    closePhotoWorker();
  }
  console.log(markdown(rows));
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`error: ${err.message}`);
      Deno.exit(2);
    }
    throw err;
  }
}
