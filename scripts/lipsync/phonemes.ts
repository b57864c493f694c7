/**
 * espeak-ng's English phoneme mnemonics → the 15 Oculus visemes (lib/render/visemes.ts),
 * and per-frame labels from phoneme start times.
 */
import { type Viseme, VISEMES } from "../../lib/render/visemes.ts";

const EXACT: Record<string, Viseme> = {
  p: "PP",
  b: "PP",
  m: "PP",
  f: "FF",
  v: "FF",
  T: "TH",
  D: "TH",
  t: "DD",
  d: "DD",
  n: "nn",
  N: "nn",
  l: "nn",
  k: "kk",
  g: "kk",
  h: "kk",
  x: "kk",
  tS: "CH",
  dZ: "CH",
  S: "CH",
  Z: "CH",
  s: "SS",
  z: "SS",
  r: "RR",
  "3": "RR",
  "3:": "RR",
  j: "I",
  w: "U",
};

/**
 * The viseme of one espeak-ng phoneme (stress marks and length ignored), or null for a
 * bare modifier (";" palatalization, "#"), which continues the previous phoneme.
 */
export function visemeOf(phoneme: string): Viseme | null {
  const p = phoneme.replace(/[',%=]/g, "");
  if (/^[;#:]+$/.test(p)) return null;
  if (p === "" || p.startsWith("_") || p === "?") return "sil";
  if (EXACT[p]) return EXACT[p];
  const base = p.replace(/[:#;0-9]+$/, "");
  if (EXACT[base]) return EXACT[base];
  if (p.startsWith("t") && p.length > 1 && EXACT[p[1]] === undefined) {
    return "DD";
  }
  const c = p[0];
  if (c === "a" || c === "A" || c === "V") return "aa";
  if (c === "@") return "E";
  if (c === "e" || c === "E") return "E";
  if (c === "i" || c === "I") return "I";
  if (c === "0" || c === "O" || c === "o") return "O";
  if (c === "u" || c === "U") return "U";
  if (EXACT[c]) return EXACT[c];
  throw new Error(`no viseme for espeak-ng phoneme ${JSON.stringify(phoneme)}`);
}

/**
 * Visemes whose phonemes are unlike sounds get one profile per sound (the classifier,
 * lib/render/visemes.ts, adds up their probabilities): the lips close for p, b and m
 * alike, but a p is a voiceless closure (near silence), a b a voiced one (a low murmur)
 * and an m a nasal (voiced, energy low, the higher formants damped); one Gaussian over
 * all three sat between them and matched none, so their frames went to the closures of
 * t/k and to the rounded vowels. Likewise f (voiceless) and v (voiced). The same split
 * of the other consonant visemes (TH, DD, kk, CH, SS, nn) was measured and not taken:
 * it traded kk, SS and RR frames for DD and nn ones (docs/notes/performance-history.md, "Lip sync").
 */
const SPLIT: ReadonlySet<Viseme> = new Set(["PP", "FF"]);
const VOICED = new Set(["b", "v"]);
const NASAL = new Set(["m"]);

/**
 * Which profile of its viseme a phoneme trains: "nasal", "voiced" or "voiceless" for the
 * visemes split by sound, else undefined (the viseme's one profile).
 */
export function partOf(phoneme: string, viseme: Viseme): string | undefined {
  if (!SPLIT.has(viseme)) return undefined;
  const p = phoneme.replace(/[',%=:#;0-9]+/g, "");
  return NASAL.has(p) ? "nasal" : VOICED.has(p) ? "voiced" : "voiceless";
}

/** A phoneme's viseme, its profile part (`partOf`), and start in samples at `rate`. */
export interface TimedViseme {
  phoneme: string;
  viseme: Viseme;
  part?: string;
  start: number;
}

/**
 * The phoneme sounding at the centre of each `frameSamples`-long frame of an utterance
 * of `total` samples (null before the first phoneme).
 */
export function framePhonemes(
  timed: readonly TimedViseme[],
  total: number,
  frameSamples: number,
): Array<TimedViseme | null> {
  const out: Array<TimedViseme | null> = [];
  let i = -1;
  for (let f = 0; (f + 1) * frameSamples <= total; f++) {
    const mid = f * frameSamples + frameSamples / 2;
    while (i + 1 < timed.length && timed[i + 1].start <= mid) i++;
    out.push(i < 0 ? null : timed[i]);
  }
  return out;
}

export { VISEMES };
