/**
 * Helpers of the lip-sync benchmark (bench/lipsync.ts): decoding an fMP4 stream with the
 * npm ffmpeg (mouth-region luma per video frame with its pts, the audio track as PCM
 * with its first pts, the H.264 bytes), and finding onsets in both.
 */
import { Encoder } from "../lib/render/encoder.ts";
import { ffmpegPath } from "../lib/render/ffmpeg.ts";
import { concat } from "../lib/render/mp4_boxes.ts";
import { STREAM_RATE } from "../lib/render/voice.ts";

export { audioOnsets, pairOnsets } from "../scripts/lipsync/onsets.ts";
export { decodeAudio } from "../scripts/lipsync/decode.ts";
import { ffmpeg, ptsOf } from "../scripts/lipsync/decode.ts";

/** The decoded video's crop `r`, as luma planes with their presentation times (s). */
export async function decodeMouths(
  file: string,
  r: { x: number; y: number; w: number; h: number },
): Promise<{ pts: number[]; planes: Uint8Array[] }> {
  const { out, err } = await ffmpeg([
    "-loglevel",
    "info",
    "-i",
    file,
    "-map",
    "0:v:0",
    "-vf",
    `crop=${r.w}:${r.h}:${r.x}:${r.y},showinfo`,
    "-vsync",
    "passthrough",
    "-f",
    "rawvideo",
    "-pix_fmt",
    "yuv420p",
    "pipe:1",
  ]);
  // yuv420p as decoded (limited range, as drawn); only the Y plane of each frame is kept.
  const size = r.w * r.h;
  const planes: Uint8Array[] = [];
  for (let at = 0; at + size * 1.5 <= out.length; at += size * 1.5) {
    planes.push(out.subarray(at, at + size));
  }
  const pts = ptsOf(err);
  if (pts.length !== planes.length) {
    throw new Error(`${pts.length} pts for ${planes.length} frames`);
  }
  return { pts, planes };
}

/** Bytes of the H.264 elementary stream in `file`. */
export async function videoBytes(file: string): Promise<number> {
  const { out } = await ffmpeg([
    "-loglevel",
    "error",
    "-i",
    file,
    "-map",
    "0:v:0",
    "-c",
    "copy",
    "-f",
    "h264",
    "pipe:1",
  ]);
  return out.length;
}

/** Pixels darker than the mouth's inside threshold (the open mouth) in a luma crop. */
export function darkPixels(plane: Uint8Array, below = 52): number {
  let n = 0;
  for (let i = 0; i < plane.length; i++) if (plane[i] < below) n++;
  return n;
}

/** Indices of frames where the mouth opens (≥ `min` dark pixels) after ≥ 3 closed ones. */
export function openings(dark: number[], min: number): number[] {
  const out: number[] = [];
  let closed = 3;
  for (let k = 0; k < dark.length; k++) {
    if (dark[k] >= min) {
      if (closed >= 3) out.push(k);
      closed = 0;
    } else closed++;
  }
  return out;
}

/** The `q` quantile (0..1) of `xs` (nearest rank). */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** PSNR (dB) between two equally sized luma crops. */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  let e = 0;
  for (let i = 0; i < a.length; i++) e += (a[i] - b[i]) ** 2;
  const mse = e / a.length;
  return mse === 0 ? 99 : 10 * Math.log10(255 * 255 / mse);
}

/**
 * The session's encoder (H.264 + AAC in fMP4, 25 fps) for a `size`×`size` run, fed
 * frame by frame as fast as it takes them (at most ~1 s queued).
 */
export async function runEncoder(size: number) {
  const parts: Uint8Array[] = [];
  // Fragments carrying a frame: the audio before each keyframe leaves in a fragment
  // of its own, which counted as a frame let the writer drift a frame ahead per
  // second until the encoder's queue overflowed ("encoder fell behind").
  let frames = 0;
  let failure: Error | null = null;
  const encoder = new Encoder(
    {
      ffmpeg: await ffmpegPath(),
      width: size,
      height: size,
      fps: 25,
      sampleRate: STREAM_RATE,
    },
    {
      onInit: (b) => parts.push(b.slice()),
      onSegment: (b, video) => {
        parts.push(b.slice());
        if (video) frames++;
      },
      onFailure: (err) => (failure = err),
    },
  );
  const wait = async (until: () => boolean) => {
    while (!until() && !failure) await new Promise((r) => setTimeout(r, 5));
    if (failure) throw failure;
  };
  return {
    pid: encoder.pid,
    /** Frame `k` (I420, kept until written: pass a fresh one) and its 48-kHz audio. */
    async write(k: number, frame: Uint8Array, samples: Int16Array) {
      const audio = new Uint8Array(samples.slice().buffer);
      if (!encoder.write(frame, audio)) throw new Error("encoder fell behind");
      await wait(() => k - frames <= 25);
    },
    /** Waits until all but the last `left` of `total` frames are out. */
    caughtUp: (total: number, left = 3) => wait(() => frames >= total - left),
    /** Stops the encoder and writes the stream to `file`. */
    async finish(file: string) {
      const { clean } = await encoder.stop({
        graceful: true,
        timeoutMs: 20_000,
      });
      if (!clean) throw new Error("encoder did not finish");
      await Deno.writeFile(file, concat(parts));
    },
  };
}
