/**
 * The labelled lip-sync set (scripts/lipsync/set/): espeak-ng sentences as WAV files
 * with their phonemes' start samples (labels.json), made by make_profiles.ts. Loaded
 * here at the stream rate (48 kHz, through the renderer's own resampler) with one
 * viseme label per 40-ms render frame.
 */
import { Resampler, STREAM_RATE } from "../../lib/render/voice.ts";
import type { Viseme } from "../../lib/render/visemes.ts";
import {
  framePhonemes,
  partOf,
  type TimedViseme,
  visemeOf,
} from "./phonemes.ts";

export const SET_DIR = new URL("./set/", import.meta.url);
/** Samples per 40-ms render frame at the stream rate. */
export const FRAME_SAMPLES = STREAM_RATE / 25;

/** One sentence of the set as labels.json stores it. */
export interface SetEntry {
  file: string;
  text: string;
  voice: string;
  wpm: number;
  rate: number;
  /** espeak-ng phoneme mnemonics and start samples at `rate`. */
  phonemes: Array<{ name: string; sample: number }>;
}

/** A sentence ready to render: 48-kHz PCM and a viseme label per render frame. */
export interface LabelledUtterance {
  entry: SetEntry;
  pcm: Int16Array;
  labels: Viseme[];
}

/** PCM16 mono → a WAV file. */
export function encodeWav(pcm: Int16Array, rate: number): Uint8Array {
  const out = new Uint8Array(44 + pcm.length * 2);
  const v = new DataView(out.buffer);
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  };
  ascii(0, "RIFF");
  v.setUint32(4, 36 + pcm.length * 2, true);
  ascii(8, "WAVEfmt ");
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true);
  v.setUint16(22, 1, true);
  v.setUint32(24, rate, true);
  v.setUint32(28, rate * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  ascii(36, "data");
  v.setUint32(40, pcm.length * 2, true);
  for (let i = 0; i < pcm.length; i++) v.setInt16(44 + 2 * i, pcm[i], true);
  return out;
}

/** The PCM16 samples of a WAV file this module wrote (44-byte header, mono s16le). */
export function decodeWav(bytes: Uint8Array): Int16Array {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = v.getUint32(40, true) >> 1;
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = v.getInt16(44 + 2 * i, true);
  return pcm;
}

/**
 * 48-kHz PCM and per-frame labels of a synthesized utterance, with the profile part
 * (./phonemes.ts `partOf`) of each frame's phoneme.
 */
export function labelUtterance(
  pcm: Int16Array,
  rate: number,
  phonemes: SetEntry["phonemes"],
): { pcm: Int16Array; labels: Viseme[]; parts: Array<string | undefined> } {
  const up = new Resampler(STREAM_RATE).process(pcm, rate);
  const k = STREAM_RATE / rate;
  const timed: TimedViseme[] = [];
  for (const p of phonemes) {
    const viseme = visemeOf(p.name);
    if (viseme === null) continue;
    timed.push({
      phoneme: p.name,
      viseme,
      part: partOf(p.name, viseme),
      start: Math.round(p.sample * k),
    });
  }
  const at = framePhonemes(timed, up.length, FRAME_SAMPLES);
  return {
    pcm: up,
    labels: at.map((t) => t?.viseme ?? "sil"),
    parts: at.map((t) => t?.part),
  };
}

/** Loads the committed labelled set. */
export async function loadSet(
  dir: URL = SET_DIR,
): Promise<LabelledUtterance[]> {
  const entries: SetEntry[] = JSON.parse(
    await Deno.readTextFile(new URL("labels.json", dir)),
  );
  const out: LabelledUtterance[] = [];
  for (const entry of entries) {
    const raw = decodeWav(await Deno.readFile(new URL(entry.file, dir)));
    const { pcm, labels } = labelUtterance(raw, entry.rate, entry.phonemes);
    out.push({ entry, pcm, labels });
  }
  return out;
}

/**
 * The set's speech end to end, looped: frame `i`'s `FRAME_SAMPLES` (the benches' steady
 * talk, pauses between utterances included).
 */
export function loopedFrames(
  set: LabelledUtterance[],
): (i: number) => Int16Array {
  let total = 0;
  for (const u of set) total += u.pcm.length;
  const speech = new Int16Array(total);
  let at = 0;
  for (const u of set) (speech.set(u.pcm, at), at += u.pcm.length);
  const frames = Math.floor(speech.length / FRAME_SAMPLES);
  return (i) => {
    const k = i % frames;
    return speech.subarray(k * FRAME_SAMPLES, (k + 1) * FRAME_SAMPLES);
  };
}
