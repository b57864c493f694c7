import assert from "node:assert/strict";
import { findAvatar } from "../../../lib/avatars.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../lib/render/builtin.ts";
import { drawAvatarAlpha } from "../../../lib/render/draw.ts";
import { FaceDriver } from "../../../lib/render/face.ts";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { concat } from "../../../lib/render/mp4_boxes.ts";
import { RenderStartError } from "../../../lib/ports/render.ts";
import { stackAlpha } from "../../../lib/render/stacked.ts";
import { parseInitSegment } from "../../../client/webcodecs/fmp4.ts";
import { ManualClock, RecordingSink } from "./_helpers.ts";

const W = 128;
const H = 128;

function face() {
  return new FaceDriver(7, 25).next(new Int16Array(1920));
}

/** Luma at (x, y) of an I420 picture `w` wide. */
function luma(data: Uint8Array, w: number, x: number, y: number): number {
  return data[y * w + x];
}

/** The head's centre and a top corner: inside and outside every pose. */
const INSIDE = { x: W / 2, y: Math.round(H * 0.42) };
const OUTSIDE = { x: 2, y: 2 };

Deno.test("drawAvatarAlpha() is the avatar's outline: 255 inside, 0 outside, soft edges", () => {
  const alpha = new Uint8Array(W * H);
  drawAvatarAlpha(alpha, W, H, findAvatar("ava")!, face());
  assert.equal(luma(alpha, W, INSIDE.x, INSIDE.y), 255);
  assert.equal(luma(alpha, W, OUTSIDE.x, OUTSIDE.y), 0);
  // The shoulders reach the bottom edge; the sky beside the head is empty.
  assert.equal(luma(alpha, W, W / 2, H - 1), 255);
  assert.equal(luma(alpha, W, 4, Math.round(H * 0.42)), 0);
  const soft = alpha.filter((v) => v > 0 && v < 255).length;
  assert.ok(soft > W, `${soft} anti-aliased edge pixels`);
});

Deno.test("stackAlpha() puts the premultiplied colour on top and the alpha below", () => {
  const f = { width: 4, height: 2, data: new Uint8Array(12) };
  f.data.fill(200, 0, 8); // luma
  f.data.fill(60, 8, 10); // U
  f.data.fill(220, 10, 12); // V
  const alpha = new Uint8Array([0, 0, 255, 255, 0, 0, 255, 255]);
  const out = stackAlpha(f, alpha);
  assert.equal(out.length, 4 * 4 * 3 / 2);
  assert.deepEqual([...out.subarray(0, 8)], [
    16,
    16,
    200,
    200,
    16,
    16,
    200,
    200,
  ]);
  assert.deepEqual([...out.subarray(8, 16)], [...alpha]);
  // U: 2×2 chroma for the 4×4 picture; top row the colour (left block transparent).
  assert.deepEqual([...out.subarray(16, 20)], [128, 60, 128, 128]);
  assert.deepEqual([...out.subarray(20, 24)], [128, 220, 128, 128]);
});

Deno.test("a transparent session streams stacked frames whose alpha survives the encoder in full range", async () => {
  const onClose: Array<() => void | Promise<void>> = [];
  const clock = new ManualClock();
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    width: W,
    height: H,
    clock,
  });
  const session = await backend.open({
    sessionId: "session:alpha",
    avatarId: "ava",
    bgId: "transparent",
  });
  const sink = new RecordingSink();
  session.attach(sink);
  for (let t = 0; t < 400; t += 40) clock.advance(40);
  await sink.until(() => sink.segments.length >= 5);
  await session.stop({ graceful: true, timeoutMs: 5000 });
  const video = parseInitSegment(sink.inits[0].init).find((t) =>
    t.kind === "video"
  )!;
  assert.equal(video.width, W);
  assert.equal(video.height, 2 * H);

  // Decoded by ffmpeg as it is coded (yuv420p out, no range conversion).
  const file = await Deno.makeTempFile({ suffix: ".mp4" });
  try {
    await Deno.writeFile(file, concat([sink.inits[0].init, ...sink.segments]));
    const out = await new Deno.Command(await ffmpegPath(), {
      args: [
        "-v",
        "error",
        "-i",
        file,
        "-frames:v",
        "1",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "yuv420p",
        "pipe:1",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const pic = out.stdout;
    assert.equal(pic.length, W * 2 * H * 3 / 2);
    // Alpha half: full range survives (a limited-range clip would give 16 and 235).
    const a = (x: number, y: number) => luma(pic, W, x, H + y);
    assert.ok(a(OUTSIDE.x, OUTSIDE.y) <= 3, `outside alpha ${a(2, 2)}`);
    assert.ok(
      a(INSIDE.x, INSIDE.y) >= 252,
      `inside alpha ${a(INSIDE.x, INSIDE.y)}`,
    );
    // Colour half: black around the avatar, skin in the face.
    const c = (x: number, y: number) => luma(pic, W, x, y);
    assert.ok(Math.abs(c(OUTSIDE.x, OUTSIDE.y) - 16) <= 3);
    assert.ok(
      c(INSIDE.x, INSIDE.y) > 150,
      `face luma ${c(INSIDE.x, INSIDE.y)}`,
    );
  } finally {
    await Deno.remove(file);
    for (const fn of onClose) await fn();
  }
});

Deno.test("open() refuses a transparent background for a painter without alpha", async () => {
  const onClose: Array<() => void | Promise<void>> = [];
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    width: W,
    height: H,
    clock: new ManualClock(),
    ffmpeg: "/bin/false",
    painters: () => Promise.resolve({ width: W, height: H, paint: () => {} }),
  });
  await assert.rejects(
    backend.open({ sessionId: "s", avatarId: "photo", bgId: "transparent" }),
    (e: unknown) => e instanceof RenderStartError && e.kind === "misconfigured",
  );
});
