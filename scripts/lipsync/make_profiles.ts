/**
 * Builds the viseme profiles (lib/render/viseme_profiles.json) and the labelled evaluation
 * set (scripts/lipsync/set/) from espeak-ng speech:
 *
 *   deno task lipsync:profiles
 *
 * Training: TRAIN sentences × TRAIN_VOICES × two speaking rates, synthesized by
 * libespeak-ng (./espeak.ts) with each phoneme's start sample, resampled to the stream
 * rate by the renderer's resampler, cut into 40-ms render frames, each labelled with
 * the viseme (./phonemes.ts) sounding at its centre. A profile is the mean and standard
 * deviation of each feature (lib/render/visemes.ts: MFCCs c1…c12, their change since the
 * previous frame, the level below the recent peak) over a viseme's frames that are above
 * the silence level, with its share of frames as the prior; PP and FF get one profile
 * per sound of theirs (./phonemes.ts `partOf`: p, b and m are unlike sounds). The
 * evaluation set is other sentences in voices the training did not use; it is written
 * as WAV + labels.json and committed, so tests and `deno task bench:lipsync` do not
 * need espeak-ng. Same espeak-ng (1.51) → same files.
 * (lib/render/visemes.ts imports the profiles file, so it must exist to run this: from
 * nothing, start it as `{"source":"","silenceDb":-45,"classes":[]}`.)
 */
import {
  FEATURE_COUNT,
  rmsDb,
  type Viseme,
  VisemeClassifier,
  visemeIndex,
  type VisemeProfiles,
} from "../../lib/render/visemes.ts";
import { analyzeVoice } from "../../lib/render/voice.ts";
import { speak } from "./espeak.ts";
import {
  encodeWav,
  FRAME_SAMPLES,
  labelUtterance,
  SET_DIR,
  type SetEntry,
} from "./set.ts";
import { EVAL, EVAL_VOICES, TRAIN, TRAIN_VOICES } from "./sentences.ts";

const SILENCE_DB = -45;
const PROFILES_FILE = new URL(
  "../../lib/render/viseme_profiles.json",
  import.meta.url,
);

/** Feature rows per profile ("TH", "PP/nasal"), of frames above the silence level. */
type Rows = Map<string, number[][]>;

const key = (viseme: string, part?: string) =>
  part ? `${viseme}/${part}` : viseme;

/** Adds the feature rows of one utterance's frames. */
function collect(
  pcm: Int16Array,
  labels: readonly string[],
  parts: ReadonlyArray<string | undefined>,
  rows: Rows,
): void {
  const c = new VisemeClassifier({
    source: "",
    silenceDb: SILENCE_DB,
    classes: [],
  });
  for (let f = 0; f < labels.length; f++) {
    const frame = pcm.subarray(f * FRAME_SAMPLES, (f + 1) * FRAME_SAMPLES);
    const feat = c.featuresOf(frame, rmsDb(analyzeVoice(frame).rms));
    if (!feat) continue;
    const k = key(labels[f], parts[f]);
    let r = rows.get(k);
    if (!r) rows.set(k, r = []);
    r.push([...feat]);
  }
}

/** The profiles, in `VISEMES` order and each viseme's parts in name order. */
function profiles(rows: Rows): VisemeProfiles {
  let total = 0;
  for (const r of rows.values()) total += r.length;
  const order = [...rows.keys()].sort((a, b) => {
    const [va, pa = ""] = a.split("/");
    const [vb, pb = ""] = b.split("/");
    return visemeIndex(va as Viseme) - visemeIndex(vb as Viseme) ||
      (pa < pb ? -1 : pa > pb ? 1 : 0);
  });
  const classes: VisemeProfiles["classes"] = [];
  for (const k of order) {
    const r = rows.get(k)!;
    const [viseme, part] = k.split("/") as [Viseme, string | undefined];
    if (r.length < 10) continue;
    const mean: number[] = [];
    const std: number[] = [];
    for (let k = 0; k < FEATURE_COUNT; k++) {
      let s = 0;
      for (const x of r) s += x[k];
      const m = s / r.length;
      let q = 0;
      for (const x of r) q += (x[k] - m) ** 2;
      mean.push(Number(m.toFixed(4)));
      std.push(Number(Math.max(0.05, Math.sqrt(q / r.length)).toFixed(4)));
    }
    classes.push({
      viseme,
      ...(part ? { part } : {}),
      frames: r.length,
      prior: Number((r.length / total).toFixed(4)),
      mean,
      std,
    });
  }
  return {
    source:
      `scripts/lipsync/make_profiles.ts: ${TRAIN.length} sentences × ${TRAIN_VOICES.length} espeak-ng voices × 2 rates`,
    silenceDb: SILENCE_DB,
    classes,
  };
}

/** The profiles from the training speech (needs libespeak-ng). */
export function buildProfiles(): VisemeProfiles {
  const rows: Rows = new Map();
  for (const text of TRAIN) {
    for (const voice of TRAIN_VOICES) {
      for (const wpm of [150, 185]) {
        const u = speak(text, voice, wpm);
        const { pcm, labels, parts } = labelUtterance(
          u.pcm,
          u.rate,
          u.phonemes,
        );
        collect(pcm, labels, parts, rows);
      }
    }
  }
  return profiles(rows);
}

async function main(): Promise<void> {
  const p = buildProfiles();
  await Deno.writeTextFile(PROFILES_FILE, JSON.stringify(p) + "\n");
  console.log(
    `profiles: ${
      p.classes.map((c) => `${key(c.viseme, c.part)} ${c.frames}`).join(", ")
    } frames`,
  );
  await Deno.mkdir(SET_DIR, { recursive: true });
  const entries: SetEntry[] = [];
  let i = 0;
  for (const text of EVAL) {
    const voice = EVAL_VOICES[i % EVAL_VOICES.length];
    const wpm = 165;
    const u = speak(text, voice, wpm);
    const file = `${String(++i).padStart(2, "0")}.wav`;
    await Deno.writeFile(new URL(file, SET_DIR), encodeWav(u.pcm, u.rate));
    entries.push({
      file,
      text,
      voice,
      wpm,
      rate: u.rate,
      phonemes: u.phonemes,
    });
  }
  await Deno.writeTextFile(
    new URL("labels.json", SET_DIR),
    JSON.stringify(entries, null, 1) + "\n",
  );
  // The house formatter, so the committed files are exactly what this script writes.
  const fmt = await new Deno.Command(Deno.execPath(), {
    args: [
      "fmt",
      PROFILES_FILE.pathname,
      new URL("labels.json", SET_DIR).pathname,
    ],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!fmt.success) throw new Error("deno fmt failed on the generated files");
  console.log(
    `labelled set: ${entries.length} sentences in ${SET_DIR.pathname}`,
  );
}

if (import.meta.main) await main();
