/**
 * Audio → viseme classification, frame by frame, as uLipSync does it: the MFCCs of each
 * 40-ms frame (./mfcc.ts) are scored against per-viseme profiles (a mean and spread per
 * coefficient for each of the 15 Oculus visemes, made from labelled espeak-ng speech by
 * scripts/lipsync/make_profiles.ts into ./viseme_profiles.json), and the scores become a
 * probability per viseme. A viseme whose phonemes are unlike sounds (PP: the closures of
 * p and b, the nasal m) has one profile per sound, and its probability is theirs added
 * up. Frames below the silence level are `sil` outright.
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

/**
 * Per-viseme profiles: mean and standard deviation of each feature, and a prior; one per
 * viseme, or one per part (sound) of a viseme split by sound.
 */
export interface VisemeProfiles {
  /** How they were made (script, corpus, date-free so the file is reproducible). */
  source: string;
  /** Frames quieter than this (dBFS RMS) are silence. */
  silenceDb: number;
  classes: Array<{
    viseme: Viseme;
    /** Which sound of the viseme ("nasal", "voiced", "voiceless"), when it is split. */
    part?: string;
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
  /** Per profile: its viseme's index, feature means, 1 / deviations, log prior − log det. */
  #viseme: Int32Array;
  #means: Float64Array[] = [];
  #invStd: Float64Array[] = [];
  #bias: Float64Array;
  #scores: Float64Array;
  #silence: number;

  constructor(readonly profiles: VisemeProfiles = PROFILES) {
    this.#silence = profiles.silenceDb;
    const n = profiles.classes.length;
    this.#viseme = new Int32Array(n);
    this.#bias = new Float64Array(n);
    this.#scores = new Float64Array(n);
    profiles.classes.forEach((c, i) => {
      this.#viseme[i] = visemeIndex(c.viseme);
      const means = new Float64Array(FEATURE_COUNT);
      const invStd = new Float64Array(FEATURE_COUNT);
      let logDet = 0;
      for (let k = 0; k < FEATURE_COUNT; k++) {
        means[k] = c.mean[k];
        invStd[k] = 1 / c.std[k];
        logDet += Math.log(c.std[k]);
      }
      this.#means.push(means);
      this.#invStd.push(invStd);
      this.#bias[i] = Math.log(c.prior) - logDet;
    });
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
    const n = this.#scores.length;
    let best = -Infinity;
    for (let c = 0; c < n; c++) {
      const m = this.#means[c];
      const is = this.#invStd[c];
      let d = 0;
      for (let k = 0; k < FEATURE_COUNT; k++) {
        const z = (f[k] - m[k]) * is[k];
        d += z * z;
      }
      const s = this.#bias[c] - 0.5 * d;
      this.#scores[c] = s;
      if (s > best) best = s;
    }
    out.fill(0);
    let sum = 0;
    for (let c = 0; c < n; c++) {
      // Tempered softmax: the per-coefficient scores are not independent, so the raw
      // likelihoods are overconfident; 1/4 keeps close calls blended. A split viseme
      // gets the sum of its parts.
      const p = Math.exp((this.#scores[c] - best) / 4);
      out[this.#viseme[c]] += p;
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
