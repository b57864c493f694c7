/**
 * The speech of an evaluation clip: espeak-ng (scripts/lipsync/espeak.ts, its C library
 * by FFI) speaking a statement full of p, b and m, a pause, and a question, resampled to
 * the stream rate, with the viseme its phonemes make at each 40-ms frame
 * (scripts/lipsync/set.ts `labelUtterance`): the frames where the lips must be shut,
 * and the opening the visemes ask for.
 */
import { VISEME_SHAPES } from "../../lib/render/mouth.ts";
import { STREAM_RATE } from "../../lib/render/voice.ts";
import { type Viseme, visemeIndex } from "../../lib/render/visemes.ts";
import { speak } from "../lipsync/espeak.ts";
import { FRAME_SAMPLES, labelUtterance } from "../lipsync/set.ts";

/**
 * What the avatar says: utterances with pauses between, dense in p, b and m, one a
 * question; each starts on a vowel, so the audio's onsets are not the silent closure
 * of a p (which the A/V offset would count as lateness).
 */
export const SENTENCES = [
  "I hope Bob will pass me the big blue map.",
  "Are my mom and Pam baking apple pie?",
  "Oh, I am happy.",
];
const VOICE = "en-us";
const WPM = 160;
/** Silence between the two utterances. */
const PAUSE_FRAMES = 12;

/** The agent's turn: 48-kHz PCM (whole frames) and one viseme label per frame. */
export interface Speech {
  pcm: Int16Array;
  labels: Viseme[];
}

/** Synthesizes the turn once (about 7 s). */
export function makeSpeech(): Speech {
  const pcm: Int16Array[] = [];
  const labels: Viseme[] = [];
  SENTENCES.forEach((text, i) => {
    const u = speak(text, VOICE, WPM);
    const l = labelUtterance(u.pcm, u.rate, u.phonemes);
    const frames = l.labels.length;
    if (i > 0) {
      pcm.push(new Int16Array(PAUSE_FRAMES * FRAME_SAMPLES));
      for (let k = 0; k < PAUSE_FRAMES; k++) labels.push("sil");
    }
    pcm.push(l.pcm.subarray(0, frames * FRAME_SAMPLES));
    labels.push(...l.labels);
  });
  const out = new Int16Array(labels.length * FRAME_SAMPLES);
  let at = 0;
  for (const p of pcm) (out.set(p, at), at += p.length);
  return { pcm: out, labels };
}

/** The opening (0..1) the labelled viseme asks for; shut (0) on p, b, m and silence. */
export function expectedOpening(label: Viseme): number {
  return label === "PP" ? 0 : VISEME_SHAPES[visemeIndex(label)].open;
}

/** The first sample of `pcm` louder than `level` (its onset), or -1. */
export function firstLoud(pcm: Int16Array, level = 800): number {
  for (let i = 0; i < pcm.length; i++) if (Math.abs(pcm[i]) > level) return i;
  return -1;
}

/** Samples of a 40-ms frame at the stream rate. */
export const SAMPLES_PER_FRAME = STREAM_RATE / 25;
