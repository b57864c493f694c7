/**
 * The example engine's offline "voice": formant-synthesised babble. Each syllable is a
 * glottal pulse train (falling pitch across the phrase) through three vowel formant
 * resonators, preceded by a short noise burst for the consonant; words are separated by
 * short gaps and punctuation by longer pauses, so the duration follows the text.
 */

const VOWELS: [number, number, number][] = [
  [730, 1090, 2440], // a
  [530, 1840, 2480], // e
  [270, 2290, 3010], // i
  [570, 840, 2410], // o
  [300, 870, 2240], // u
];
const SYLLABLE_S = 0.17;
const WORD_GAP_S = 0.06;
const PUNCT_GAP_S = 0.25;

/** The example engine's reply to typed text. */
export function replyFor(text: string): string {
  const t = text.trim().replace(/\s+/g, " ").slice(0, 200);
  return `You typed: ${t}.`;
}

/** Syllables of a word: vowel groups, at least one. */
function syllables(word: string): number {
  return Math.max(1, (word.toLowerCase().match(/[aeiouy]+/g) ?? []).length);
}

class Resonator {
  #y1 = 0;
  #y2 = 0;
  #a: number;
  #b: number;
  #c: number;
  constructor(freq: number, bw: number, rate: number) {
    const r = Math.exp((-Math.PI * bw) / rate);
    this.#b = 2 * r * Math.cos((2 * Math.PI * freq) / rate);
    this.#c = -r * r;
    this.#a = 1 - this.#b - this.#c;
  }
  step(x: number): number {
    const y = this.#a * x + this.#b * this.#y1 + this.#c * this.#y2;
    this.#y2 = this.#y1;
    this.#y1 = y;
    return y;
  }
}

/** PCM16 mono babble at `rate` Hz for `text`; deterministic for a given text. */
export function babble(text: string, rate: number): Int16Array {
  const out: number[] = [];
  let seed = 1;
  for (const ch of text) seed = (seed * 31 + ch.charCodeAt(0)) >>> 0;
  const rand = () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const tokens = text.match(/[\p{L}\p{N}']+|[.,!?;:]/gu) ?? [];
  const total = tokens.reduce(
    (n, w) => n + (/^[.,!?;:]$/.test(w) ? 0 : syllables(w)),
    0,
  );
  let done = 0;
  const silence = (s: number) => {
    for (let i = 0; i < Math.round(s * rate); i++) out.push(0);
  };
  for (const tok of tokens) {
    if (/^[.,!?;:]$/.test(tok)) {
      silence(PUNCT_GAP_S);
      continue;
    }
    for (let s = 0; s < syllables(tok); s++) {
      const [f1, f2, f3] = VOWELS[Math.floor(rand() * VOWELS.length)];
      const res = [
        new Resonator(f1, 90, rate),
        new Resonator(f2, 110, rate),
        new Resonator(f3, 170, rate),
      ];
      const f0 = 170 - 50 * (done / Math.max(1, total)) + 10 * rand();
      const n = Math.round(SYLLABLE_S * rate);
      const burst = Math.round(0.03 * rate);
      let phase = 0;
      for (let i = 0; i < n; i++) {
        phase += f0 / rate;
        let src = 0;
        if (phase >= 1) {
          phase -= 1;
          src = 1;
        }
        if (i < burst) src += (rand() - 0.5) * 0.4;
        const y = res[0].step(src) + 0.6 * res[1].step(src) +
          0.3 * res[2].step(src);
        const env = Math.min(1, i / (0.02 * rate)) *
          Math.min(1, (n - i) / (0.05 * rate));
        out.push(y * env);
      }
      done++;
    }
    silence(WORD_GAP_S);
  }
  let peak = 0;
  for (const v of out) peak = Math.max(peak, Math.abs(v));
  const gain = peak > 0 ? 12000 / peak : 0;
  return Int16Array.from(out, (v) => Math.round(v * gain));
}
