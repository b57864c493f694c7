/**
 * bench:lipsync on a photo avatar (`--avatar photo`): the test portrait prepared as an
 * upload is, painted by lib/render/photo/ on the same timeline as the cartoon, encoded
 * by the session's `Encoder`, then measured on the decoded video of the first pass:
 * the face mesh (the upload's own model) on every decoded frame gives the mouth opening
 * a viewer sees (inner-lip gap over face height), compared with the opening the
 * visemes asked for (Pearson correlation), the p/b/m frames with the lips shut, the
 * A/V offset of openings against the decoded audio's onsets, and the identity kept
 * (SSIM of idle frames — 0.4 s or more into a silence, eyes open — against the
 * portrait, mouth and eyes left out).
 */
import { closePhotoWorker, preparePhoto } from "../lib/photo/mod.ts";
import { photoModels } from "../lib/photo/models.ts";
import { FaceDriver } from "../lib/render/face.ts";
import { ffmpegPath } from "../lib/render/ffmpeg.ts";
import { createPhotoPainter } from "../lib/render/photo/mod.ts";
import type { PhotoAvatar } from "../lib/render/photo/types.ts";
import { createFrame } from "../lib/render/raster.ts";
import { FRAME_SAMPLES } from "../scripts/lipsync/set.ts";
import {
  audioOnsets,
  decodeAudio,
  pairOnsets,
  quantile,
  runEncoder,
} from "./_lipsync_lib.ts";
import { ssim } from "../scripts/ssim.ts";

const FPS = 25;
const SIZE = 512;
const PORTRAIT = new URL(
  "../tests/fixtures/photo/grace_hopper.jpg",
  import.meta.url,
);

/** What was drawn per frame: the opening asked for, and whether the face was idle. */
interface Drawn {
  open: number[];
  idle: boolean[];
}

async function render(
  avatar: PhotoAvatar,
  pcm: Int16Array,
  file: string,
): Promise<Drawn> {
  const encoder = await runEncoder(SIZE);
  const painter = createPhotoPainter(avatar, { bg: null, seed: 42 });
  const face = new FaceDriver(42);
  const drawn: Drawn = { open: [], idle: [] };
  const frames = pcm.length / FRAME_SAMPLES;
  let silent = 0;
  for (let k = 0; k < frames; k++) {
    const samples = pcm.subarray(k * FRAME_SAMPLES, (k + 1) * FRAME_SAMPLES);
    // The next frame's audio is queued ahead, as in a session (the face's look-ahead).
    const ahead = k + 1 < frames
      ? pcm.subarray((k + 1) * FRAME_SAMPLES, (k + 2) * FRAME_SAMPLES)
      : undefined;
    const state = face.next(samples, ahead);
    // A fresh frame each time: the encoder holds the ones it has not written yet.
    const frame = createFrame(SIZE, SIZE);
    painter.paint(frame, state, face.weights);
    drawn.open.push(state.mouth.open);
    // Idle: silent for 0.4 s or more (between sentences, as between turns), eyes open.
    silent = face.weights[0] > 0.99 ? silent + 1 : 0;
    drawn.idle.push(silent >= 10 && state.blink === 0);
    await encoder.write(k, frame.data, samples);
  }
  await encoder.finish(file);
  return drawn;
}

/**
 * Decodes `file`'s first `seconds` as RGB frames, one at a time, into `each` (frame
 * index, pixels); returns the frames' presentation times.
 */
async function eachFrame(
  file: string,
  seconds: number,
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
      "-t",
      String(seconds),
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
  const size = SIZE * SIZE * 3;
  let buf = new Uint8Array(0);
  let j = 0;
  for await (const chunk of child.stdout) {
    const next = new Uint8Array(buf.length + chunk.length);
    next.set(buf), next.set(chunk, buf.length);
    buf = next;
    while (buf.length >= size) {
      await each(j++, buf.slice(0, size));
      buf = buf.slice(size);
    }
  }
  await child.status;
  return [...(await log).matchAll(/pts_time:\s*([-\d.]+)/g)].map((m) =>
    Number(m[1])
  );
}

/** Pearson correlation of two equal-length series. */
function correlation(a: number[], b: number[]): number {
  const n = a.length;
  const ma = a.reduce((s, x) => s + x, 0) / n,
    mb = b.reduce((s, x) => s + x, 0) / n;
  let sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; i++) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) ** 2;
    sbb += (b[i] - mb) ** 2;
  }
  return sab / Math.sqrt(saa * sbb);
}

/** The portrait's luma with the mouth and eyes' boxes (from its mesh) left out. */
function identityMask(a: PhotoAvatar): (x: number, y: number) => boolean {
  const p = (i: number) => [a.landmarks[i * 3], a.landmarks[i * 3 + 1]];
  const boxes = [[61, 291, 0, 17], [33, 133, 159, 145], [362, 263, 386, 374]]
    .map(
      ([l, r, t, b]) => {
        const m = 0.5 * (p(r)[0] - p(l)[0]);
        return [
          p(l)[0] - m * 0.4,
          p(r)[0] + m * 0.4,
          p(t)[1] - m,
          p(b)[1] + m * 1.2,
        ];
      },
    );
  return (x, y) =>
    boxes.some(([x0, x1, y0, y1]) => x >= x0 && x < x1 && y >= y0 && y < y1);
}

/** Runs the photo measurement on the timeline of bench/lipsync.ts. */
export async function photoLipsync(
  pcm: Int16Array,
  labelled: Array<{ frame: number; label: string }>,
  dir: string,
): Promise<Record<string, unknown>> {
  const avatar = await preparePhoto(await Deno.readFile(PORTRAIT), {
    avatarId: "ph_BENCHLIPSYNC000000000000",
    tenantId: "bench",
    name: "Grace",
    createdAt: 0,
  });
  // A live preparation worker would keep the bench's process from exiting.
  closePhotoWorker();
  const file = `${dir}/photo.mp4`;
  const drawn = await render(avatar, pcm, file);
  // The first pass: the labelled frames and a little after.
  const firstPass = (labelled[labelled.length - 1].frame + 15) / FPS;
  const gap: number[] = [];
  const lumaSsim = new Map<number, number>();
  const skip = identityMask(avatar);
  const portrait = avatar.i420.subarray(0, SIZE * SIZE);
  const luma = new Uint8Array(SIZE * SIZE);
  const t0 = performance.now();
  const pts = await eachFrame(file, firstPass, async (j, rgb) => {
    const faces = await photoModels.faces({
      width: SIZE,
      height: SIZE,
      data: rgb,
    });
    const f = faces[0];
    if (!f) return void (gap[j] = NaN);
    const y = (i: number) => f.mesh[i * 3 + 1];
    // Inner-lip gap at the middle three pairs, over the face's height.
    const g = (y(14) - y(13) + y(178) - y(81) + y(402) - y(311)) / 3;
    gap[j] = Math.max(0, g) / (y(152) - y(10));
    // Decoded frame j shows drawn frame j + 1 (checked against its pts below).
    if (drawn.idle[j + 1]) {
      for (let i = 0; i < luma.length; i++) {
        luma[i] = 16 +
          (65.481 * rgb[3 * i] + 128.553 * rgb[3 * i + 1] +
              24.966 * rgb[3 * i + 2]) / 255;
      }
      lumaSsim.set(j, ssim(luma, portrait, SIZE, SIZE, skip));
    }
  });
  const meshMs = (performance.now() - t0) / pts.length;
  // Decoded frame j shows drawn frame m = pts × 25 (the first drawn frame is never shown).
  const shownAt = (j: number) => Math.round(pts[j] * FPS);
  const asked: number[] = [], seen: number[] = [];
  const idleGaps: number[] = [];
  for (let j = 1; j < pts.length; j++) {
    const m = shownAt(j);
    if (!Number.isFinite(gap[j]) || m >= drawn.open.length) continue;
    asked.push(drawn.open[m]);
    seen.push(gap[j]);
    if (drawn.idle[m]) idleGaps.push(gap[j]);
  }
  const rest = quantile(idleGaps, 0.5);
  // Shut: within 1.2 % of the face's height of the rest gap; open: 2 px apart more
  // than at rest at this face's size (the mesh's points are whole pixels).
  const shutBelow = rest + 0.012, openAbove = rest + 0.009;
  let pp = 0, ppShut = 0;
  const byDrawn = new Map<number, number>();
  for (let j = 1; j < pts.length; j++) byDrawn.set(shownAt(j), j);
  for (const { frame, label } of labelled) {
    const j = byDrawn.get(frame);
    if (label !== "PP" || j === undefined || !Number.isFinite(gap[j])) continue;
    pp++;
    if (gap[j] <= shutBelow) ppShut++;
  }
  const audio = await decodeAudio(file);
  const onsets = audioOnsets(audio.pcm).map((t) => audio.start + t)
    .filter((t) => t < firstPass - 0.5);
  const opens = pts.filter((_, j) => j > 0 && gap[j] > openAbove);
  const { offsets, missed } = pairOnsets(onsets, opens);
  const idleSsim = [...lumaSsim].filter(([j]) => drawn.idle[shownAt(j)]).map((
    [, v],
  ) => v);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    avatar: "photo (tests/fixtures/photo/grace_hopper.jpg)",
    size: SIZE,
    decoded_frames: pts.length,
    mesh_ms_per_frame: Math.round(meshMs),
    opening_correlation: r3(correlation(asked, seen)),
    rest_gap_over_face: r3(rest),
    pp_frames: pp,
    pp_lips_shut: r3(ppShut / pp),
    onsets: onsets.length,
    paired: offsets.length,
    missed,
    abs_offset_p95_ms: Math.round(quantile(offsets.map(Math.abs), 0.95) * 1000),
    offset_p50_ms: Math.round(quantile(offsets, 0.5) * 1000),
    idle_frames_compared: idleSsim.length,
    idle_ssim_min: r3(Math.min(...idleSsim)),
    idle_ssim_median: r3(quantile(idleSsim, 0.5)),
  };
}
