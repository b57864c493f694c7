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

/** A phoneme's viseme and start, in samples at `rate`. */
export interface TimedViseme {
  phoneme: string;
  viseme: Viseme;
  start: number;
}

/**
 * The label of each `frameSamples`-long frame of an utterance of `total` samples: the
 * viseme sounding at the frame's centre (sil before the first phoneme).
 */
export function frameLabels(
  timed: readonly TimedViseme[],
  total: number,
  frameSamples: number,
): Viseme[] {
  const out: Viseme[] = [];
  let i = -1;
  for (let f = 0; (f + 1) * frameSamples <= total; f++) {
    const mid = f * frameSamples + frameSamples / 2;
    while (i + 1 < timed.length && timed[i + 1].start <= mid) i++;
    out.push(i < 0 ? "sil" : timed[i].viseme);
  }
  return out;
}

export { VISEMES };
