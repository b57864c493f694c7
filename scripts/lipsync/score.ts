/**
 * Viseme accuracy on the labelled set: the share of 40-ms frames whose drawn viseme is
 * the label's, for the viseme renderer (lib/render/face.ts: the heaviest of the smoothed
 * viseme weights, which is the shape the mouth mostly takes) and for the loudness-only
 * baseline (./baseline.ts: the viseme nearest its mouth). Shared by the test and
 * `deno task bench:lipsync`.
 */
import { FaceDriver } from "../../lib/render/face.ts";
import { VISEMES } from "../../lib/render/visemes.ts";
import { analyzeVoice } from "../../lib/render/voice.ts";
import { baselineViseme, MouthFollower } from "./baseline.ts";
import { FRAME_SAMPLES, type LabelledUtterance } from "./set.ts";

/** Per-frame drawn visemes of one utterance, both ways. */
export interface DrawnVisemes {
  visemes: number[];
  baseline: number[];
}

/** Runs both mouths over an utterance (the driver seeded with `seed`). */
export function drawnVisemes(u: LabelledUtterance, seed = 1): DrawnVisemes {
  const face = new FaceDriver(seed);
  const base = new MouthFollower();
  const out: DrawnVisemes = { visemes: [], baseline: [] };
  for (let f = 0; f < u.labels.length; f++) {
    const frame = u.pcm.subarray(f * FRAME_SAMPLES, (f + 1) * FRAME_SAMPLES);
    face.next(frame);
    out.visemes.push(face.viseme);
    out.baseline.push(baselineViseme(base.next(analyzeVoice(frame))));
  }
  return out;
}

export interface Accuracy {
  frames: number;
  /** Share of frames whose drawn viseme is the label's. */
  visemes: number;
  baseline: number;
  /** Per label: frames, and how many each way got right. */
  perClass: Record<
    string,
    { frames: number; visemes: number; baseline: number }
  >;
}

/** Accuracy of both mouths over a set. */
export function accuracy(set: readonly LabelledUtterance[]): Accuracy {
  const perClass: Accuracy["perClass"] = {};
  let frames = 0;
  let good = 0;
  let base = 0;
  for (const u of set) {
    const d = drawnVisemes(u);
    for (let f = 0; f < u.labels.length; f++) {
      const label = u.labels[f];
      const c = perClass[label] ??= { frames: 0, visemes: 0, baseline: 0 };
      c.frames++;
      frames++;
      if (VISEMES[d.visemes[f]] === label) (c.visemes++, good++);
      if (VISEMES[d.baseline[f]] === label) (c.baseline++, base++);
    }
  }
  return { frames, visemes: good / frames, baseline: base / frames, perClass };
}
