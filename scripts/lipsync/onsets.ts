/**
 * Lip-sync timing on decoded media (bench/lipsync.ts, the photo evaluation): speech
 * onsets in the audio, and each paired with the mouth's first opening.
 */

/**
 * Speech onsets (s from the first sample): the first 5-ms hop whose 10-ms RMS reaches
 * −40 dBFS after at least `quietMs` of hops under −50 dBFS.
 */
export function audioOnsets(
  pcm: Int16Array,
  rate = 48000,
  quietMs = 150,
): number[] {
  const hop = rate / 200;
  const win = 2 * hop;
  const out: number[] = [];
  let quietRun = 0;
  let armed = true;
  for (let at = 0; at + win <= pcm.length; at += hop) {
    let e = 0;
    for (let i = at; i < at + win; i++) e += pcm[i] * pcm[i];
    const db = 20 * Math.log10(Math.sqrt(e / win) / 32768 + 1e-12);
    if (db < -50) {
      quietRun++;
      if (quietRun * 5 >= quietMs) armed = true;
      continue;
    }
    quietRun = 0;
    if (db >= -40 && armed) {
      out.push(at / rate);
      armed = false;
    }
  }
  return out;
}

/**
 * Each audio onset paired with the first mouth opening from 200 ms before it on
 * (`opens`: times, ascending): the offsets (s, opening − onset) and the onsets with
 * no opening within 300 ms after them.
 */
export function pairOnsets(
  onsets: number[],
  opens: number[],
): { offsets: number[]; missed: number } {
  const offsets: number[] = [];
  let missed = 0;
  for (const a of onsets) {
    const v = opens.find((t) => t >= a - 0.2);
    if (v === undefined || v > a + 0.3) missed++;
    else offsets.push(v - a);
  }
  return { offsets, missed };
}
