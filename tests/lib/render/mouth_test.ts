import assert from "node:assert/strict";
import { AVATARS, BACKGROUNDS } from "../../../lib/avatars.ts";
import {
  createFrame,
  drawAvatar,
  mouthRegion,
} from "../../../lib/render/draw.ts";
import { restingFace } from "../../../lib/render/face.ts";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import {
  blendShape,
  nearestViseme,
  VISEME_SHAPES,
} from "../../../lib/render/mouth.ts";
import { VISEME_COUNT, VISEMES } from "../../../lib/render/visemes.ts";

const OUT = new URL("../../../test-output/visemes/", import.meta.url);
const SIZE = 512;

/** One 512×512 frame of Ava at rest, mouth in viseme `v`'s shape. */
function visemeFrame(v: number): Uint8Array {
  const f = createFrame(SIZE, SIZE);
  const state = restingFace();
  state.mouth = { ...VISEME_SHAPES[v] };
  drawAvatar(f, AVATARS.find((a) => a.id === "ava-hd")!, BACKGROUNDS[1], state);
  return f.data;
}

/** Writes an I420 frame as a PNG with ffmpeg. */
async function png(frame: Uint8Array, path: string): Promise<void> {
  const child = new Deno.Command(await ffmpegPath(), {
    args: [
      "-y",
      "-loglevel",
      "error",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "yuv420p",
      "-s",
      `${SIZE}x${SIZE}`,
      "-i",
      "pipe:0",
      "-frames:v",
      "1",
      path,
    ],
    stdin: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(frame);
  await w.close();
  const r = await child.output();
  assert.ok(r.success, new TextDecoder().decode(r.stderr));
}

Deno.test("mouth shapes", async (t) => {
  await t.step(
    "one screenshot per viseme in test-output/visemes/, every shape its own",
    async () => {
      await Deno.mkdir(OUT, { recursive: true });
      const m = mouthRegion(SIZE, SIZE);
      const mouths: Uint8Array[] = [];
      for (let v = 0; v < VISEME_COUNT; v++) {
        const frame = visemeFrame(v);
        const name = `${String(v).padStart(2, "0")}_${VISEMES[v]}.png`;
        await png(frame, new URL(name, OUT).pathname);
        const head = await Deno.readFile(new URL(name, OUT));
        assert.deepEqual([...head.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
        const crop = new Uint8Array(m.w * m.h);
        for (let y = 0; y < m.h; y++) {
          const row = (m.y + y) * SIZE + m.x;
          crop.set(frame.subarray(row, row + m.w), y * m.w);
        }
        mouths.push(crop);
      }
      for (let a = 0; a < VISEME_COUNT; a++) {
        for (let b = a + 1; b < VISEME_COUNT; b++) {
          let d = 0;
          for (let i = 0; i < mouths[a].length; i++) {
            d += Math.abs(mouths[a][i] - mouths[b][i]);
          }
          assert.ok(
            d > 300,
            `${VISEMES[a]} and ${VISEMES[b]} look alike (${d})`,
          );
        }
      }
    },
  );

  await t.step(
    "weights blend shapes; a pure weight gives its own shape",
    () => {
      const w = new Float64Array(VISEME_COUNT);
      w[VISEMES.indexOf("aa")] = 1;
      assert.deepEqual(blendShape(w), VISEME_SHAPES[VISEMES.indexOf("aa")]);
      w.fill(0);
      w[VISEMES.indexOf("O")] = 0.5;
      w[VISEMES.indexOf("I")] = 0.5;
      const mid = blendShape(w);
      assert.ok(mid.round > 0.3 && mid.wide > 0.4, JSON.stringify(mid));
      // PP the heaviest, even far from a majority: the lips meet and press.
      w.fill(0);
      w[VISEMES.indexOf("PP")] = 0.3;
      w[VISEMES.indexOf("aa")] = 0.25;
      w[VISEMES.indexOf("O")] = 0.25;
      w[VISEMES.indexOf("E")] = 0.2;
      const shut = blendShape(w);
      assert.equal(shut.open, 0);
      assert.equal(shut.press, 1);
      assert.ok(shut.round > 0.2, "rounding stays blended");
      // The baseline's mapping: wide open reads as aa, small and round as U.
      assert.equal(
        VISEMES[nearestViseme({ open: 1, wide: 0.45, round: 0 })],
        "aa",
      );
      assert.equal(
        VISEMES[nearestViseme({ open: 0.3, wide: 0, round: 1 })],
        "U",
      );
    },
  );
});
