/**
 * The clip as a viewer gets it: its fMP4 decoded by the npm ffmpeg, video frame by
 * frame as RGB with each frame's presentation time, and the audio track as 48-kHz PCM
 * (../lipsync/decode.ts).
 */
import { ffmpegPath } from "../../lib/render/ffmpeg.ts";
export { decodeAudio } from "../lipsync/decode.ts";

/**
 * Decodes `file`'s video as `width`×`height` RGB frames, one at a time into `each`
 * (decode index, pixels, which `each` may keep); returns each frame's pts (s).
 */
export async function eachFrame(
  file: string,
  width: number,
  height: number,
  each: (j: number, rgb: Uint8Array) => Promise<void>,
): Promise<number[]> {
  const child = new Deno.Command(await ffmpegPath(), {
    args: [
      "-hide_banner",
      "-nostdin",
      "-loglevel",
      "info",
      "-i",
      file,
      "-map",
      "0:v:0",
      "-vf",
      "showinfo",
      "-vsync",
      "passthrough",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "pipe:1",
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const log = new Response(child.stderr).text();
  const size = width * height * 3;
  let frame = new Uint8Array(size);
  let filled = 0;
  let j = 0;
  for await (const chunk of child.stdout) {
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(size - filled, chunk.length - at);
      frame.set(chunk.subarray(at, at + n), filled);
      filled += n;
      at += n;
      if (filled === size) {
        await each(j++, frame);
        frame = new Uint8Array(size);
        filled = 0;
      }
    }
  }
  const status = await child.status;
  const text = await log;
  if (!status.success) throw new Error(`ffmpeg failed: ${text.slice(-300)}`);
  const pts = [...text.matchAll(/pts_time:\s*([-\d.]+)/g)].map((m) =>
    Number(m[1])
  );
  if (pts.length !== j) throw new Error(`${pts.length} pts for ${j} frames`);
  return pts;
}
