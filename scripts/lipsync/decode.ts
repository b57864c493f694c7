/**
 * Decoding a rendered fMP4 with the npm ffmpeg for the lip-sync measures (bench/lipsync.ts,
 * the photo evaluation): a run of ffmpeg, the presentation times its `showinfo` filters
 * print, and the audio track as 48-kHz PCM with its first pts.
 */
import { ffmpegPath } from "../../lib/render/ffmpeg.ts";

/** Runs ffmpeg, returning stdout and stderr; throws with the stderr tail on failure. */
export async function ffmpeg(
  args: string[],
): Promise<{ out: Uint8Array; err: string }> {
  const r = await new Deno.Command(await ffmpegPath(), {
    args: ["-hide_banner", "-nostdin", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(r.stderr);
  if (!r.success) throw new Error(`ffmpeg failed: ${err.slice(-500)}`);
  return { out: r.stdout, err };
}

/** The `pts_time` values ffmpeg's `showinfo`/`ashowinfo` printed, in order. */
export const ptsOf = (log: string) =>
  [...log.matchAll(/pts_time:\s*([-\d.]+)/g)].map((m) => Number(m[1]));

/** The decoded audio track at 48 kHz mono and the pts (s) of its first sample. */
export async function decodeAudio(
  file: string,
): Promise<{ start: number; pcm: Int16Array }> {
  const { out, err } = await ffmpeg([
    "-loglevel",
    "info",
    "-i",
    file,
    "-map",
    "0:a:0",
    "-af",
    "ashowinfo",
    "-f",
    "s16le",
    "-ac",
    "1",
    "-ar",
    "48000",
    "pipe:1",
  ]);
  const pcm = new Int16Array(
    out.buffer.slice(out.byteOffset, out.byteOffset + (out.length & ~1)),
  );
  return { start: ptsOf(err)[0] ?? 0, pcm };
}
