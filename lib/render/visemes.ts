/**
 * Audio → viseme classification, frame by frame, as uLipSync does it: the MFCCs of each
 * 40-ms frame (./mfcc.ts) are scored against per-viseme profiles (a mean and spread per
 * coefficient for each of the 15 Oculus visemes, made from labelled espeak-ng speech by
 * scripts/lipsync/make_profiles.ts into ./viseme_profiles.json), and the scores become a
 * probability per viseme. Frames below the silence level are `sil` outright.
 */
import { mfcc, MFCC_COUNT } from "./mfcc.ts";
import profiles from "./viseme_profiles.json" with { type: "json" };

/** The Oculus viseme set (sil, bilabials, labiodentals, dentals, alveolars, …, vowels). */
export const VISEMES = [
  "sil",
  "PP",
  "FF",
  "TH",
  "DD",
  "kk",
  "CH",
  "SS",
  "nn",
  "RR",
  "aa",
  "E",
  "I",
  "O",
  "U",
] as const;
export type Viseme = typeof VISEMES[number];
export const VISEME_COUNT = VISEMES.length;

/** Index of a viseme in `VISEMES`. */
export function visemeIndex(v: Viseme): number {
  return VISEMES.indexOf(v);
}

/**
 * Features per frame: the frame's MFCCs, their change since the previous frame, and
 * the frame's level relative to the recent speech peak.
 */
export const FEATURE_COUNT = 2 * MFCC_COUNT + 1;

/** Per-viseme profiles: mean and standard deviation of each feature, and a prior. */
export interface VisemeProfiles {
  /** How they were made (script, corpus, date-free so the file is reproducible). */
  source: string;
  /** Frames quieter than this (dBFS RMS) are silence. */
  silenceDb: number;
  classes: Array<{
    viseme: Viseme;
    frames: number;
    prior: number;
    mean: number[];
    std: number[];
  }>;
}

/** The committed profiles (`deno task lipsync:profiles` makes them). */
export const PROFILES = profiles as VisemeProfiles;

/** dBFS of an RMS level (0..1 of full scale). */
export function rmsDb(rms: number): number {
  return rms > 0 ? 20 * Math.log10(rms) : -120;
}

/** Turns frames of audio into viseme probabilities; keeps the previous frame's MFCCs. */
export class VisemeClassifier {
  #prev = new Float64Array(MFCC_COUNT);
  /** The recent speech peak (dBFS), falling 0.5 dB a frame. */
  #peak = -120;
  #cur = new Float64Array(MFCC_COUNT);
  #feat = new Float64Array(FEATURE_COUNT);
  #means: Float64Array[];
  #invStd: Float64Array[];
  #bias: Float64Array;
  #scores = new Float64Array(VISEME_COUNT);
  #silence: number;

  constructor(readonly profiles: VisemeProfiles = PROFILES) {
    this.#silence = profiles.silenceDb;
    this.#means = [];
    this.#invStd = [];
    this.#bias = new Float64Array(VISEME_COUNT).fill(-Infinity);
    for (let v = 0; v < VISEME_COUNT; v++) {
      this.#means.push(new Float64Array(FEATURE_COUNT));
      this.#invStd.push(new Float64Array(FEATURE_COUNT));
    }
    for (const c of profiles.classes) {
      const v = visemeIndex(c.viseme);
      let logDet = 0;
      for (let k = 0; k < FEATURE_COUNT; k++) {
        this.#means[v][k] = c.mean[k];
        this.#invStd[v][k] = 1 / c.std[k];
        logDet += Math.log(c.std[k]);
      }
      this.#bias[v] = Math.log(c.prior) - logDet;
    }
  }

  /**
   * The features of one frame (MFCCs and their change since the previous frame), or
   * null when the frame is below the silence level. The array is reused per call.
   */
  featuresOf(samples: Int16Array, db: number): Float64Array | null {
    this.#peak = Math.max(db, this.#peak - 0.5);
    if (db < this.#silence) {
      this.#prev.fill(0);
      return null;
    }
    mfcc(samples, this.#cur);
    const f = this.#feat;
    for (let k = 0; k < MFCC_COUNT; k++) {
      f[k] = this.#cur[k];
      f[MFCC_COUNT + k] = this.#cur[k] - this.#prev[k];
    }
    // How far below the recent peak: closures, stops and fricatives are quieter
    // than the vowels around them (dB / 4, about the MFCCs' range).
    f[2 * MFCC_COUNT] = (db - this.#peak) / 4;
    this.#prev.set(this.#cur);
    return f;
  }

  /**
   * Probabilities of each viseme (index as in `VISEMES`) for one frame of 48-kHz audio
   * whose RMS level is `db` dBFS, written into `out`.
   */
  classify(
    samples: Int16Array,
    db: number,
    out: Float64Array = new Float64Array(VISEME_COUNT),
  ): Float64Array {
    const f = this.featuresOf(samples, db);
    if (!f) {
      out.fill(0);
      out[0] = 1;
      return out;
    }
    let best = -Infinity;
    for (let v = 0; v < VISEME_COUNT; v++) {
      if (this.#bias[v] === -Infinity) {
        this.#scores[v] = -Infinity;
        continue;
      }
      const m = this.#means[v];
      const is = this.#invStd[v];
      let d = 0;
      for (let k = 0; k < FEATURE_COUNT; k++) {
        const z = (f[k] - m[k]) * is[k];
        d += z * z;
      }
      const s = this.#bias[v] - 0.5 * d;
      this.#scores[v] = s;
      if (s > best) best = s;
    }
    let sum = 0;
    for (let v = 0; v < VISEME_COUNT; v++) {
      // Tempered softmax: the per-coefficient scores are not independent, so the raw
      // likelihoods are overconfident; 1/4 keeps close calls blended.
      const p = Math.exp((this.#scores[v] - best) / 4);
      out[v] = p;
      sum += p;
    }
    for (let v = 0; v < VISEME_COUNT; v++) out[v] /= sum;
    return out;
  }

  reset(): void {
    this.#prev.fill(0);
    this.#peak = -120;
  }
}
