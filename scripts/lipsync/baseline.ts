/**
 * The loudness-only mouth the renderer drew before visemes (issue 14's baseline): the
 * RMS envelope opens it, the zero-crossing rate makes it round or wide. Kept to compare
 * against in `deno task bench:lipsync` and its test.
 */
import { nearestViseme } from "../../lib/render/mouth.ts";
import type { VoiceFeatures } from "../../lib/render/voice.ts";

/** Turns per-frame voice features into a smoothed mouth opening and width. */
export class MouthFollower {
  #open = 0;
  #wide = 0.5;

  /** The mouth for the next frame: opens fast, closes a little slower. */
  next(f: VoiceFeatures): { open: number; wide: number } {
    const db = f.rms > 0 ? 20 * Math.log10(f.rms) : -120;
    const target = Math.min(1, Math.max(0, (db + 48) / 36));
    const k = target > this.#open ? 0.65 : 0.35;
    this.#open += (target - this.#open) * k;
    if (this.#open < 0.01) this.#open = 0;
    // Hissy sounds (many crossings) read as a wide mouth, voiced ones as rounder.
    const wideTarget = target > 0
      ? Math.min(1, Math.max(0, (f.zcr - 0.02) / 0.12))
      : 0.5;
    this.#wide += (wideTarget - this.#wide) * 0.4;
    return { open: this.#open, wide: this.#wide };
  }
}

/**
 * The viseme a baseline mouth shows: sil when closed, else the one whose shape is
 * nearest its opening and width (its width ran from round, 0, to wide, 1).
 */
export function baselineViseme(m: { open: number; wide: number }): number {
  // It drew a closed mouth (the resting line) below 0.05.
  if (m.open <= 0.05) return 0;
  return nearestViseme({
    open: m.open,
    wide: m.wide,
    round: Math.max(0, 1 - 2 * m.wide),
  });
}
