/**
 * What a recorded fMP4 stream holds, decoded by ffmpeg as a browser would (edit lists
 * applied): where its agent audio is audible (as presentation times), and its frames.
 */
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";

/** Runs ffmpeg on `init` + `segments` (piped in) with `args`; answers its stdout. */
async function decode(
  init: Uint8Array,
  segments: Uint8Array[],
  args: string[],
): Promise<Uint8Array> {
  const child = new Deno.Command(await ffmpegPath(), {
    args: ["-v", "error", "-i", "pipe:0", ...args, "pipe:1"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Read while writing: a long stream's output fills the pipe before its input is in.
  const output = child.output();
  const writer = child.stdin.getWriter();
  await writer.write(concat(init, segments));
  await writer.close();
  const out = await output;
  if (!out.success) {
    throw new Error(`ffmpeg: ${new TextDecoder().decode(out.stderr)}`);
  }
  return out.stdout;
}

/** Decodes `init` + `segments` to 48 kHz mono PCM16 from presentation time 0. */
export async function decodeAudio(
  init: Uint8Array,
  segments: Uint8Array[],
): Promise<Int16Array> {
  const out = await decode(init, segments, [
    "-map",
    "0:a",
    "-af",
    "aresample=async=1:first_pts=0",
    "-f",
    "s16le",
    "-ac",
    "1",
    "-ar",
    "48000",
  ]);
  return new Int16Array(out.buffer, out.byteOffset, out.length >> 1);
}

/**
 * The audible stretches of `pcm` (48 kHz) as [start, end) ms: 10-ms windows whose peak
 * reaches `level`, joined across gaps shorter than `gapMs`.
 */
export function audibleSpans(
  pcm: Int16Array,
  level = 2000,
  gapMs = 200,
): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  const win = 480;
  for (let i = 0; i < pcm.length; i += win) {
    let peak = 0;
    for (let j = i; j < Math.min(pcm.length, i + win); j++) {
      peak = Math.max(peak, Math.abs(pcm[j]));
    }
    if (peak < level) continue;
    const ms = i / 48;
    const last = spans.at(-1);
    if (last && ms - last[1] < gapMs) last[1] = ms + 10;
    else spans.push([ms, ms + 10]);
  }
  return spans;
}

/** Decodes the video of `init` + `segments` to 8-bit luma frames of `w`×`h`. */
export async function decodeLuma(
  init: Uint8Array,
  segments: Uint8Array[],
  w: number,
  h: number,
): Promise<Uint8Array[]> {
  const out = await decode(init, segments, [
    "-map",
    "0:v",
    "-f",
    "rawvideo",
    "-pix_fmt",
    "gray",
  ]);
  const frames: Uint8Array[] = [];
  for (let at = 0; at + w * h <= out.length; at += w * h) {
    frames.push(out.subarray(at, at + w * h));
  }
  return frames;
}

function concat(init: Uint8Array, segments: Uint8Array[]): Uint8Array {
  const size = init.length + segments.reduce((n, s) => n + s.length, 0);
  const all = new Uint8Array(size);
  all.set(init);
  let at = init.length;
  for (const s of segments) {
    all.set(s, at);
    at += s.length;
  }
  return all;
}
