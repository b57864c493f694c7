/**
 * Encoder settings for talking heads (`deno task bench:encoder`): the photo painter's
 * frames (the test portrait, prepared as an upload is, square 512×512 and in the
 * portrait framing 720×1280) and the 512×512 cartoon's, talking on the labelled
 * lip-sync speech, pauses included, are painted once to a raw I420 file, then coded by
 * the npm ffmpeg with the service's own H.264 command line (lib/render/ffmpeg.ts
 * `h264Args`) and with one setting changed at a time. Per row: the bit rate, the PSNR of the decoded stream against the painted
 * frames (luma, and the mean of the three planes), the largest frame (a keyframe: what
 * a socket must carry at once), and the encoder's CPU (ffmpeg's own `-benchmark`
 * user + system time) as a share of one core at 25 fps. One run, side by side; the
 * machine's load is printed under the table.
 */
import { preparePhoto } from "../lib/photo/mod.ts";
import { closePhotoWorker } from "../lib/photo/worker.ts";
import type { Framing } from "../lib/render/photo/types.ts";
import { AVATARS, BACKGROUNDS } from "../lib/avatars.ts";
import { drawAvatar } from "../lib/render/draw.ts";
import { FaceDriver, type FaceState } from "../lib/render/face.ts";
import { createPhotoPainter } from "../lib/render/photo/mod.ts";
import { createFrame, type Frame } from "../lib/render/raster.ts";
import { ffmpegPath, h264Args, videoMaxKbps } from "../lib/render/ffmpeg.ts";
import { loadSet, loopedFrames } from "../scripts/lipsync/set.ts";

const PORTRAIT = new URL(
  "../tests/fixtures/photo/grace_hopper.jpg",
  import.meta.url,
);
const FPS = 25, SECONDS = 20;

/** One setting: a name, and what it does to the service's command line. */
interface Variant {
  name: string;
  edit: (args: string[], fps: number) => string[];
}

/** `args` with the value after `flag` set to `value` (appended when absent). */
function set(args: string[], flag: string, value: string): string[] {
  const out = [...args], i = out.indexOf(flag);
  if (i < 0) return [...out, flag, value];
  out[i + 1] = value;
  return out;
}

const gop = (s: number) => (a: string[], fps: number) =>
  set(
    set(
      set(a, "-g", String(s * fps)),
      "-keyint_min",
      String(s * fps),
    ),
    "-force_key_frames",
    `expr:eq(mod(n,${s * fps}),0)`,
  );

const VARIANTS: Variant[] = [
  { name: "the service's: superfast, CRF 26, keyframe 1 s", edit: (a) => a },
  { name: "preset ultrafast", edit: (a) => set(a, "-preset", "ultrafast") },
  { name: "preset veryfast", edit: (a) => set(a, "-preset", "veryfast") },
  { name: "CRF 23", edit: (a) => set(a, "-crf", "23") },
  { name: "CRF 29", edit: (a) => set(a, "-crf", "29") },
  { name: "keyframe 2 s", edit: gop(2) },
  {
    // One keyframe, then a column of intra blocks sweeping the picture each second.
    name: "intra refresh (no periodic keyframe)",
    edit: (a, fps) =>
      set(
        set(a, "-force_key_frames", "expr:eq(n,0)"),
        "-x264-params",
        `intra-refresh=1:keyint=${fps}`,
      ),
  },
];

/** What is painted: the portrait in a framing, or the 512×512 cartoon. */
type Source = Framing | "cartoon";

/** Paints `SECONDS` of `source` talking into a raw I420 file; returns its size. */
async function paint(
  source: Source,
  frameAt: (i: number) => Int16Array,
  path: string,
) {
  let draw: (f: Frame, s: FaceState, w: Float64Array) => void;
  let width = 512, height = 512;
  if (source === "cartoon") {
    const avatar = AVATARS.find((a) => a.size === 512)!;
    draw = (f, s) => drawAvatar(f, avatar, BACKGROUNDS[0], s);
  } else {
    const avatar = await preparePhoto(await Deno.readFile(PORTRAIT), {
      avatarId: "ph_BENCHENC0DER000000000000",
      tenantId: "bench",
      name: "Grace",
      createdAt: 0,
      framing: source,
    });
    const painter = createPhotoPainter(avatar, { bg: null, seed: 3 });
    draw = (f, s, w) => painter.paint(f, s, w);
    width = avatar.width, height = avatar.height;
  }
  const driver = new FaceDriver(3);
  const frame = createFrame(width, height);
  const file = await Deno.open(path, {
    write: true,
    create: true,
    truncate: true,
  });
  for (let i = 0; i < SECONDS * FPS; i++) {
    const state = driver.next(frameAt(i));
    draw(frame, state, driver.weights);
    let off = 0;
    while (off < frame.data.length) {
      off += await file.write(frame.data.subarray(off));
    }
  }
  file.close();
  return { width, height };
}

async function run(args: string[]): Promise<string> {
  const out = await new Deno.Command(await ffmpegPath(), {
    args: ["-hide_banner", "-nostdin", ...args],
    stdout: "null",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`ffmpeg failed: ${err.slice(-400)}`);
  return err;
}

/**
 * Sizes (bytes) of the Annex B stream's access units, one per frame: each starts at
 * its parameter sets or SEI (a keyframe's), else at a slice whose first macroblock is
 * 0 (first_mb_in_slice, ue(v): a leading 1 bit).
 */
function frameSizes(h264: Uint8Array): number[] {
  const sizes: number[] = [];
  let start = -1, headers = false;
  const cut = (i: number) => {
    if (start >= 0) sizes.push(i - start);
    start = i;
  };
  for (let i = 0; i + 4 < h264.length; i++) {
    if (h264[i] !== 0 || h264[i + 1] !== 0 || h264[i + 2] !== 1) continue;
    const type = h264[i + 3] & 0x1f;
    if (type === 6 || type === 7 || type === 8 || type === 9) {
      if (!headers) cut(i);
      headers = true;
    } else if ((type === 1 || type === 5) && h264[i + 4] & 0x80) {
      if (!headers) cut(i);
      headers = false;
    }
  }
  if (start >= 0) sizes.push(h264.length - start);
  return sizes;
}

async function measure(
  raw: string,
  size: { width: number; height: number },
  v: Variant,
) {
  const dim = `${size.width}x${size.height}`;
  const base = h264Args(
    { width: size.width, height: size.height, fps: FPS, sampleRate: 48000 },
    `expr:eq(mod(n,${FPS}),0)`,
    `${videoMaxKbps(size.width, size.height)}k`,
  );
  const out = await Deno.makeTempFile({ suffix: ".h264" });
  try {
    const log = await run([
      "-benchmark",
      ...["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", dim, "-r", "25"],
      ...["-i", raw, ...v.edit(base, FPS), "-f", "h264", "-y", out],
    ]);
    const b = /utime=([\d.]+)s stime=([\d.]+)s/.exec(log);
    if (!b) throw new Error("no -benchmark line");
    const cpu = Number(b[1]) + Number(b[2]);
    const psnrLog = await run([
      ...["-i", out, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", dim],
      ...["-r", "25", "-i", raw, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"],
    ]);
    const p = /PSNR y:([\d.]+) u:[\d.]+ v:[\d.]+ average:([\d.]+)/.exec(
      psnrLog,
    );
    if (!p) throw new Error("no PSNR line");
    const h264 = await Deno.readFile(out);
    return {
      kbps: h264.length * 8 / SECONDS / 1000,
      psnrY: Number(p[1]),
      psnr: Number(p[2]),
      maxFrameKB: Math.max(...frameSizes(h264)) / 1024,
      corePct: 100 * cpu / SECONDS,
    };
  } finally {
    await Deno.remove(out).catch(() => {});
  }
}

// (The speech is read once, for every source.)
const frameAt = loopedFrames(await loadSet());
const rows: string[] = [];
for (const source of ["square", "portrait", "cartoon"] as const) {
  const raw = await Deno.makeTempFile({ suffix: ".yuv" });
  try {
    const size = await paint(source, frameAt, raw);
    for (const v of VARIANTS) {
      const m = await measure(raw, size, v);
      rows.push(
        `| ${
          source === "cartoon" ? "cartoon" : "photo"
        } ${size.width}×${size.height} | ${v.name} | ${m.kbps.toFixed(0)} | ${
          m.psnrY.toFixed(1)
        } / ${m.psnr.toFixed(1)} | ${m.maxFrameKB.toFixed(1)} | ${
          m.corePct.toFixed(1)
        } % |`,
      );
      console.error(rows[rows.length - 1]);
    }
  } finally {
    await Deno.remove(raw).catch(() => {});
  }
}
console.log(
  `\nEncoder settings, ${SECONDS} s of the talking test portrait, one run each:\n`,
);
console.log(
  "| Frame | Setting | kbit/s | PSNR Y / mean (dB) | largest frame (KiB) | encoder CPU (one core, 25 fps) |",
);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const r of rows) console.log(r);
console.log(
  `\nload average: ${Deno.loadavg().map((l) => l.toFixed(1)).join(" ")}`,
);
// (The preparation's worker would keep the process alive.)
closePhotoWorker();
