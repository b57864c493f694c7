/**
 * The photo painter through the real built-in renderer (fMP4 that ffmpeg decodes), and
 * the pictures a person looks at: test-output/photo/visemes.png (the 15 visemes and a
 * blink) and test-output/photo/sample.mp4 (10 s: idle, then answering a turn with real
 * speech from the lip-sync set).
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../../lib/render/builtin.ts";
import { FaceDriver } from "../../../../lib/render/face.ts";
import { ffmpegPath } from "../../../../lib/render/ffmpeg.ts";
import {
  createPhotoPainter,
  photoPainters,
} from "../../../../lib/render/photo/mod.ts";
import { createFrame } from "../../../../lib/render/raster.ts";
import { VISEME_COUNT, VISEMES } from "../../../../lib/render/visemes.ts";
import {
  encodeWav,
  FRAME_SAMPLES,
  loadSet,
} from "../../../../scripts/lipsync/set.ts";
import {
  assertNoEncoders,
  ManualClock,
  RecordingSink,
  videoSize,
} from "../_helpers.ts";
import {
  AVATAR_ID,
  faceWith,
  mouthGap,
  paintOnce,
  point,
  testAvatar,
} from "./_avatar.ts";
import { ssim } from "../../../../scripts/ssim.ts";

const OUT = new URL("../../../../test-output/photo/", import.meta.url);
const avatar = await testAvatar();
const W = avatar.width, H = avatar.height;

/** ffmpeg's input options for raw I420 frames of `w`×`h`. */
function rawYuv(w: number, h: number): string[] {
  return ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", `${w}x${h}`];
}

/** Runs ffmpeg with `args`, `input` on stdin; its stdout. */
async function ffmpeg(args: string[], input?: Uint8Array): Promise<Uint8Array> {
  const child = new Deno.Command(await ffmpegPath(), {
    args: ["-v", "error", "-y", ...args],
    stdin: input ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = child.output();
  if (input) {
    const w = child.stdin.getWriter();
    await w.write(input);
    await w.close();
  }
  const r = await out;
  if (!r.success) throw new Error(new TextDecoder().decode(r.stderr));
  return r.stdout;
}

Deno.test("photo avatar through the built-in renderer", async () => {
  const onClose: Array<() => void | Promise<void>> = [];
  const clock = new ManualClock();
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    clock,
    painters: photoPainters((tenant, id) =>
      Promise.resolve(tenant === "acme" && id === AVATAR_ID ? avatar : null)
    ),
  });
  const session = await backend.open({
    sessionId: "session:photo",
    tenantId: "acme",
    avatarId: AVATAR_ID,
    bgId: "",
  });
  const sink = new RecordingSink();
  session.attach(sink);
  // Two seconds: one idle, one with a sentence of speech.
  const [speech] = await loadSet();
  session.pushAudio(speech.pcm.subarray(0, 48000), 48000);
  for (let i = 0; i < 50; i++) clock.advance(40);
  await sink.until(() => sink.segments.length >= 45);
  await session.stop({ graceful: true, timeoutMs: 5000 });
  assert.equal(videoSize(sink.inits[0].init), "512x512");
  const mp4 = new Uint8Array(
    [sink.inits[0].init, ...sink.segments].reduce((n, b) => n + b.length, 0),
  );
  let at = 0;
  for (const b of [sink.inits[0].init, ...sink.segments]) {
    (mp4.set(b, at), at += b.length);
  }
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/s.mp4`, mp4);
    const raw = await ffmpeg([
      "-i",
      `${dir}/s.mp4`,
      "-f",
      "rawvideo",
      "-pix_fmt",
      "gray",
      "-",
    ]);
    const frames = raw.length / (W * H);
    assert.ok(frames >= 45, `decoded ${frames} frames`);
    const first = raw.subarray(0, W * H);
    // The decoded picture is the portrait (through a live encoder's bitrate), far
    // nearer it than to the same portrait mirrored.
    const portrait = avatar.i420.subarray(0, W * H);
    const mirrored = portrait.map((_, i) =>
      portrait[i - (i % W) + W - 1 - (i % W)]
    );
    const v = ssim(first, portrait, W, H), m = ssim(first, mirrored, W, H);
    assert.ok(
      v > 0.65 && v > m + 0.2,
      `SSIM vs portrait ${v.toFixed(3)}, mirrored ${m.toFixed(3)}`,
    );
    // And its mouth moves while the speech plays.
    const gaps = [];
    for (let k = 0; k < frames; k++) {
      gaps.push(mouthGap(avatar, raw.subarray(k * W * H, (k + 1) * W * H)));
    }
    assert.ok(
      Math.max(...gaps) > Math.min(...gaps) + 4,
      `mouth gaps ${gaps.map((g) => g.toFixed(0))}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assertNoEncoders();
});

/** The face's square around the landmarks, for sheets. */
function faceTile() {
  const [x0] = point(avatar, 234), [x1] = point(avatar, 454);
  const [, y0] = point(avatar, 10), [, y1] = point(avatar, 152);
  const side = Math.round(Math.max(x1 - x0, y1 - y0) * 1.15 / 4) * 4;
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const left = Math.max(
    0,
    Math.min(W - side, Math.round((cx - side / 2) / 2) * 2),
  );
  const top = Math.max(
    0,
    Math.min(H - side, Math.round((cy - side / 2) / 2) * 2),
  );
  return { left, top, side };
}

Deno.test("test-output/photo/visemes.png: the 15 visemes and a blink", async () => {
  await Deno.mkdir(OUT, { recursive: true });
  const p = createPhotoPainter(avatar, { bg: null, seed: 1 });
  const { left, top, side } = faceTile();
  const cols = 4, rows = 4;
  const sheet = createFrame(cols * side, rows * side);
  const sw = cols * side, sn = sw * rows * side;
  const labels = [...VISEMES, "blink"];
  labels.forEach((label, k) => {
    const v = k < VISEME_COUNT ? k : 0;
    const { state, weights } = faceWith(
      { [v]: 1 },
      label === "blink" ? { blink: 1 } : {},
    );
    const f = paintOnce(p, state, weights).data;
    const ox = (k % cols) * side, oy = Math.floor(k / cols) * side;
    for (let y = 0; y < side; y++) {
      sheet.data.set(
        f.subarray((top + y) * W + left, (top + y) * W + left + side),
        (oy + y) * sw + ox,
      );
    }
    for (let plane = 0; plane < 2; plane++) {
      const src = W * H + plane * W * H / 4, dst = sn + plane * sn / 4;
      for (let y = 0; y < side / 2; y++) {
        const from = src + (top / 2 + y) * (W / 2) + left / 2;
        sheet.data.set(
          f.subarray(from, from + side / 2),
          dst + (oy / 2 + y) * (sw / 2) + ox / 2,
        );
      }
    }
  });
  // Labels when the system has a font (ffmpeg's drawtext).
  const font = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
  const hasFont = await Deno.stat(font).then(() => true, () => false);
  const filter = hasFont
    ? labels.map((l, k) =>
      `drawtext=fontfile=${font}:text=${l}:fontsize=${
        Math.round(side / 10)
      }:fontcolor=white:borderw=2:x=${(k % cols) * side + 6}:y=${
        Math.floor(k / cols) * side + 6
      }`
    ).join(",")
    : "null";
  await ffmpeg([
    ...rawYuv(sw, rows * side),
    "-i",
    "-",
    "-vf",
    filter,
    "-frames:v",
    "1",
    new URL("visemes.png", OUT).pathname,
  ], sheet.data);
  assert.ok((await Deno.stat(new URL("visemes.png", OUT))).size > 10_000);
});

Deno.test("test-output/photo/sample.mp4: 10 s answering a turn", async () => {
  await Deno.mkdir(OUT, { recursive: true });
  const frames = 250;
  const pcm = new Int16Array(frames * FRAME_SAMPLES);
  // A second of idle, then the set's sentences with short pauses, as a turn.
  let at = 25 * FRAME_SAMPLES;
  for (const u of await loadSet()) {
    if (at + u.pcm.length > pcm.length - 15 * FRAME_SAMPLES) break;
    pcm.set(u.pcm, at);
    at += u.pcm.length + 6 * FRAME_SAMPLES;
  }
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/a.wav`, encodeWav(pcm, 48000));
    const p = createPhotoPainter(avatar, { bg: null, seed: 7 });
    const driver = new FaceDriver(7);
    const video = new Uint8Array(frames * W * H * 3 / 2);
    const f = createFrame(W, H);
    for (let i = 0; i < frames; i++) {
      const s = driver.next(
        pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES),
      );
      p.paint(f, s, driver.weights);
      video.set(f.data, i * f.data.length);
    }
    const out = new URL("sample.mp4", OUT).pathname;
    await ffmpeg([
      ...rawYuv(W, H),
      "-r",
      "25",
      "-i",
      "-",
      "-i",
      `${dir}/a.wav`,
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-crf",
      "18",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
      "-movflags",
      "+faststart",
      out,
    ], video);
    const probe = await ffmpeg([
      "-i",
      out,
      "-f",
      "rawvideo",
      "-pix_fmt",
      "gray",
      "-",
    ]);
    assert.equal(probe.length / (W * H), frames);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
