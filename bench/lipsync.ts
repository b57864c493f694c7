/**
 * Lip-sync benchmark (`deno task bench:lipsync`). Renders the committed labelled set
 * (scripts/lipsync/set/: espeak-ng sentences with phoneme timings) through the built-in
 * renderer's own pieces — `FaceDriver` (visemes, motion), `drawAvatar`, and the
 * `Encoder` (ffmpeg, H.264 + AAC in fMP4) — at each catalog size, then decodes the
 * encoded stream with the npm ffmpeg and prints:
 *
 * - A/V offset: for every speech onset in the decoded audio track (≥ −40 dBFS after
 *   ≥ 150 ms under −50 dBFS), the presentation time of the first decoded video frame
 *   whose mouth region shows the mouth open (dark inside pixels) minus the onset's
 *   time; p50, p95 and max of |offset|. Target |offset| ≤ 40 ms at p95.
 * - Viseme accuracy: the share of 40-ms frames whose drawn viseme (the heaviest of the
 *   smoothed viseme weights: the shape the mouth mostly takes) is the label's, beside
 *   the loudness-only mouth the renderer drew before (scripts/lipsync/baseline.ts).
 * - Per label: its frames and the share of them each mouth drew right; and the share
 *   of the `PP` (p, b, m) frames whose decoded mouth shows the lips shut.
 * - The video bit rate and the mouth region's PSNR (decoded against drawn).
 *
 * The set plays three times with silences of 600 ms, then of 600 ms plus an odd number
 * of ms, so onsets fall at different points of the 40-ms frame grid; accuracy is taken
 * on the first pass, whose sentences start on frame boundaries. Prints a table and one
 * `RESULT {…}` JSON line. Options: `--sizes 384,512`; `--avatar photo`: the photo
 * avatar instead, measured with the face mesh on the decoded video
 * (bench/_lipsync_photo.ts).
 */
import { AVATARS, BACKGROUNDS } from "../lib/avatars.ts";
import { createFrame, drawAvatar, mouthRegion } from "../lib/render/draw.ts";
import { FaceDriver } from "../lib/render/face.ts";
import { VISEMES } from "../lib/render/visemes.ts";
import { analyzeVoice, STREAM_RATE } from "../lib/render/voice.ts";
import { baselineViseme, MouthFollower } from "../scripts/lipsync/baseline.ts";
import { FRAME_SAMPLES, loadSet } from "../scripts/lipsync/set.ts";
import {
  audioOnsets,
  darkPixels,
  decodeAudio,
  decodeMouths,
  openings,
  pairOnsets,
  psnr,
  quantile,
  runEncoder,
  videoBytes,
} from "./_lipsync_lib.ts";
import { photoLipsync } from "./_lipsync_photo.ts";

const FPS = 25;
const GAP = 0.6 * STREAM_RATE;

function opt(name: string, def: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : def;
}

/** The audio of the run and where the first pass's labelled frames are. */
async function timeline() {
  const set = await loadSet();
  const parts: Int16Array[] = [];
  const labelled: Array<{ frame: number; label: string }> = [];
  let at = 0;
  for (let pass = 0; pass < 3; pass++) {
    set.forEach((u, i) => {
      // First pass: each sentence starts on a frame boundary, so labels line up.
      const gap = pass === 0
        ? GAP + (FRAME_SAMPLES - at % FRAME_SAMPLES) % FRAME_SAMPLES
        : GAP + (pass * 13 + i * 7) * 48;
      parts.push(new Int16Array(gap), u.pcm);
      if (pass === 0) {
        const first = (at + gap) / FRAME_SAMPLES;
        u.labels.forEach((label, k) =>
          labelled.push({ frame: first + k, label })
        );
      }
      at += gap + u.pcm.length;
    });
  }
  parts.push(new Int16Array(GAP));
  at += GAP;
  const pcm = new Int16Array(Math.ceil(at / FRAME_SAMPLES) * FRAME_SAMPLES);
  let o = 0;
  for (const p of parts) (pcm.set(p, o), o += p.length);
  return { pcm, labelled };
}

interface Rendered {
  file: string;
  visemes: number[];
  baseline: number[];
  mouths: Uint8Array[];
  encodeMs: number;
  encoderCpuS: number;
}

/** utime + stime of a process, in seconds (Linux /proc, 100 ticks a second). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Draws and encodes the whole timeline for one avatar; returns the fMP4 file. */
async function render(
  pcm: Int16Array,
  avatarId: string,
  dir: string,
): Promise<Rendered> {
  const avatar = AVATARS.find((a) => a.id === avatarId)!;
  const size = avatar.size;
  const crop = region(size);
  const encoder = await runEncoder(size);
  const face = new FaceDriver(42);
  const base = new MouthFollower();
  const out: Rendered = {
    file: `${dir}/${avatarId}.mp4`,
    visemes: [],
    baseline: [],
    mouths: [],
    encoderCpuS: 0,
    encodeMs: 0,
  };
  const frames = pcm.length / FRAME_SAMPLES;
  const t0 = performance.now();
  for (let k = 0; k < frames; k++) {
    const samples = pcm.subarray(k * FRAME_SAMPLES, (k + 1) * FRAME_SAMPLES);
    // The next frame's audio is queued ahead, as in a session (the face's look-ahead).
    const ahead = k + 1 < frames
      ? pcm.subarray((k + 1) * FRAME_SAMPLES, (k + 2) * FRAME_SAMPLES)
      : undefined;
    const state = face.next(samples, ahead);
    out.visemes.push(face.viseme);
    out.baseline.push(baselineViseme(base.next(analyzeVoice(samples))));
    const f = createFrame(size, size);
    drawAvatar(f, avatar, BACKGROUNDS[0], state);
    const mouth = new Uint8Array(crop.w * crop.h);
    for (let y = 0; y < crop.h; y++) {
      const row = (crop.y + y) * size + crop.x;
      mouth.set(f.data.subarray(row, row + crop.w), y * crop.w);
    }
    out.mouths.push(mouth);
    await encoder.write(k, f.data, samples);
  }
  // The encoder's CPU time once it has caught up (all but the last fragment out).
  await encoder.caughtUp(frames);
  out.encoderCpuS = await cpuSeconds(encoder.pid);
  await encoder.finish(out.file);
  out.encodeMs = performance.now() - t0;
  return out;
}

const ms = (s: number) => Math.round(s * 1000);

/** The mouth region with even edges (ffmpeg crops yuv420p on even coordinates). */
function region(size: number) {
  const r = mouthRegion(size, size);
  return { x: r.x & ~1, y: r.y & ~1, w: r.w & ~1, h: r.h & ~1 };
}

async function measure(
  r: Rendered,
  avatarId: string,
  labelled: Array<{ frame: number; label: string }>,
  seconds: number,
) {
  const size = AVATARS.find((a) => a.id === avatarId)!.size;
  const [video, audio, bytes] = await Promise.all([
    decodeMouths(r.file, region(size)),
    decodeAudio(r.file),
    videoBytes(r.file),
  ]);
  // Open: 10 dark pixels at 384×384 (scaled by area): a closed mouth shows none, the
  // smallest opening drawn shows more.
  const min = Math.round(10 * (size / 384) ** 2);
  const dark = video.planes.map((p) => darkPixels(p));
  const opens = openings(dark, min).map((k) => video.pts[k]);
  const onsets = audioOnsets(audio.pcm).map((t) => audio.start + t);
  const { offsets, missed } = pairOnsets(onsets, opens);
  const abs = offsets.map(Math.abs);
  let good = 0;
  let base = 0;
  const perClass: Record<string, [number, number, number]> = {};
  for (const v of VISEMES) perClass[v] = [0, 0, 0];
  for (const { frame, label } of labelled) {
    const c = perClass[label];
    c[0]++;
    if (VISEMES[r.visemes[frame]] === label) (good++, c[1]++);
    if (VISEMES[r.baseline[frame]] === label) (base++, c[2]++);
  }
  // Drawn frame m is presented at m × 40 ms (ffmpeg shows the second drawn frame over
  // the first two slots; the first is never shown).
  let q = 0;
  let n = 0;
  const shown = new Map<number, number>();
  for (let j = 1; j < video.planes.length; j++) {
    const m = Math.round(video.pts[j] * FPS);
    if (m >= r.mouths.length) break;
    q += psnr(video.planes[j], r.mouths[m]);
    n++;
    shown.set(m, j);
  }
  // What a viewer sees on p, b and m: the decoded mouth shut (no dark inside pixels).
  let pp = 0;
  let ppShut = 0;
  for (const { frame, label } of labelled) {
    const j = shown.get(frame);
    if (label !== "PP" || j === undefined) continue;
    pp++;
    if (dark[j] < min) ppShut++;
  }
  return {
    avatar: avatarId,
    size,
    onsets: onsets.length,
    paired: offsets.length,
    missed,
    offsets_ms: offsets.map(ms).sort((a, b) => a - b),
    offset_p50_ms: ms(quantile(offsets, 0.5)),
    offset_p95_ms: ms(quantile(offsets, 0.95)),
    abs_offset_p95_ms: ms(quantile(abs, 0.95)),
    abs_offset_max_ms: ms(Math.max(...abs)),
    offset_min_ms: ms(Math.min(...offsets)),
    offset_max_ms: ms(Math.max(...offsets)),
    labelled_frames: labelled.length,
    viseme_accuracy: Math.round(good / labelled.length * 1000) / 1000,
    baseline_accuracy: Math.round(base / labelled.length * 1000) / 1000,
    /** Per label: frames, drawn right by the visemes, by the loudness-only mouth. */
    per_class: perClass,
    /** Share of the PP-labelled frames whose decoded mouth shows the lips shut. */
    pp_lips_shut: Math.round(ppShut / pp * 1000) / 1000,
    video_kbps: Math.round(bytes * 8 / seconds / 1000),
    mouth_psnr_db: Math.round(q / n * 10) / 10,
    encode_x_realtime: Math.round(seconds * 1000 / r.encodeMs * 10) / 10,
    encoder_cpu_pct: Math.round(r.encoderCpuS / seconds * 1000) / 10,
  };
}

/** The per-label table of docs/notes/performance-history.md ("Lip sync"): frames and % right. */
function printPerClass(c: Record<string, [number, number, number]>): void {
  const cell = (s: string) => s.padStart(5);
  const pct = (k: number) => (v: string) =>
    cell(c[v][0] ? `${Math.round(100 * c[v][k] / c[v][0])}%` : "-");
  console.log(`  ${"label".padEnd(14)}${VISEMES.map(cell).join("")}`);
  console.log(
    `  ${"frames".padEnd(14)}${
      VISEMES.map((v) => cell(`${c[v][0]}`)).join("")
    }`,
  );
  console.log(`  ${"visemes".padEnd(14)}${VISEMES.map(pct(1)).join("")}`);
  console.log(`  ${"loudness-only".padEnd(14)}${VISEMES.map(pct(2)).join("")}`);
}

/** The photo avatar's figures against the issue's targets. */
function printPhoto(r: Record<string, unknown>): void {
  const n = (k: string) => r[k] as number;
  const check = (ok: boolean) => ok ? "met" : "MISSED";
  console.log(
    `\nphoto avatar, decoded video (${n("decoded_frames")} frames, face mesh ${
      n("mesh_ms_per_frame")
    } ms each):`,
  );
  console.log(
    `  opening seen vs asked, correlation: ${
      n("opening_correlation")
    } (target ≥ 0.8: ${check(n("opening_correlation") >= 0.8)})`,
  );
  console.log(
    `  PP frames with the lips shut: ${
      Math.round(n("pp_lips_shut") * 100)
    } % of ${n("pp_frames")} (target ≥ 80 %: ${
      check(n("pp_lips_shut") >= 0.8)
    })`,
  );
  console.log(
    `  |A/V offset| p95: ${n("abs_offset_p95_ms")} ms over ${
      n("paired")
    } onsets, ${n("missed")} without an opening (target ≤ 40 ms: ${
      check(n("abs_offset_p95_ms") <= 40)
    })`,
  );
  console.log(
    `  idle SSIM vs the portrait (mouth, eyes left out): min ${
      n("idle_ssim_min")
    }, median ${n("idle_ssim_median")} over ${
      n("idle_frames_compared")
    } frames (target ≥ 0.9: ${check(n("idle_ssim_min") >= 0.9)})`,
  );
}

async function main(): Promise<void> {
  const sizes = opt("sizes", "384,512").split(",").map(Number);
  const { pcm, labelled } = await timeline();
  const seconds = pcm.length / STREAM_RATE;
  console.log(
    `labelled set ×3: ${
      seconds.toFixed(1)
    } s, ${labelled.length} labelled frames (first pass)`,
  );
  const dir = await Deno.makeTempDir({ prefix: "bench-lipsync-" });
  if (opt("avatar", "") === "photo") {
    try {
      const r = await photoLipsync(pcm, labelled, dir);
      printPhoto(r);
      console.log(`\nRESULT ${JSON.stringify({ seconds, results: [r] })}`);
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    return;
  }
  const results = [];
  try {
    for (const size of sizes) {
      const id = AVATARS.find((a) =>
        a.size === size && a.id.startsWith("ava")
      )!.id;
      const r = await render(pcm, id, dir);
      results.push(await measure(r, id, labelled, seconds));
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  console.log(
    "\navatar   size  onsets  paired  offset p50  p95  |off| p95  max   viseme acc.  loudness-only  video kbit/s  mouth PSNR  ffmpeg CPU",
  );
  for (const r of results) {
    console.log(
      [
        r.avatar.padEnd(7),
        String(r.size).padStart(4),
        String(r.onsets).padStart(7),
        String(r.paired).padStart(7),
        `${r.offset_p50_ms} ms`.padStart(11),
        String(r.offset_p95_ms).padStart(4),
        `${r.abs_offset_p95_ms} ms`.padStart(10),
        String(r.abs_offset_max_ms).padStart(4),
        r.viseme_accuracy.toFixed(3).padStart(12),
        r.baseline_accuracy.toFixed(3).padStart(14),
        String(r.video_kbps).padStart(13),
        `${r.mouth_psnr_db} dB`.padStart(11),
        `${r.encoder_cpu_pct} %`.padStart(11),
      ].join(" "),
    );
    console.log(
      `  target |offset| ≤ 40 ms at p95: ${
        r.abs_offset_p95_ms <= 40 ? "met" : "MISSED"
      } (${r.missed} onsets without an opening)`,
    );
    printPerClass(r.per_class);
    console.log(
      `  PP frames with the lips shut in the decoded video: ${
        Math.round(r.pp_lips_shut * 100)
      } %`,
    );
  }
  console.log(`\nRESULT ${JSON.stringify({ seconds, results })}`);
}

if (import.meta.main) await main();
