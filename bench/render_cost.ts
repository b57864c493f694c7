/**
 * Render micro-benchmark (`deno task bench:render`): main-thread cost per frame of the
 * built-in renderer's own work, at each catalog size, on the labelled lip-sync speech
 * (scripts/lipsync/set/) looped: the face (`FaceDriver.next`: level, MFCCs, viseme
 * classification, motion) and the drawing (`drawAvatar` into a fresh frame, as the render
 * loop does). Prints µs per frame (median of 5 runs of 1,000 frames after a warm-up)
 * and what that is of one core at 25 fps for 24 sessions. Then the photo painter
 * (DECISIONS 12, the test portrait prepared as an upload would) beside the cartoon at
 * 512×512: ms per frame, p50 and p95 of single frames, on its own background, a
 * catalog one and transparent (with the alpha). The encoder (ffmpeg, a process per
 * stream) is not in these figures: `deno task bench:media` measures it.
 */
import { AVATARS, BACKGROUNDS } from "../lib/avatars.ts";
import { createFrame, drawAvatar } from "../lib/render/draw.ts";
import { FaceDriver } from "../lib/render/face.ts";
import { loadSet, loopedFrames } from "../scripts/lipsync/set.ts";
import { photoVsCartoon } from "./_render_photo.ts";

const frameAt = loopedFrames(await loadSet());

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

/** µs per call of `fn(i)` over `n` calls, median of `runs`. */
function time(fn: (i: number) => void, n = 1000, runs = 5): number {
  for (let i = 0; i < 300; i++) fn(i);
  const out: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn(i);
    out.push((performance.now() - t0) * 1000 / n);
  }
  return median(out);
}

console.log(
  `Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} cores`,
);
const face = new FaceDriver(1);
const faceUs = time((i) => face.next(frameAt(i)));
console.log(
  `face (level, MFCCs, visemes, motion): ${faceUs.toFixed(1)} µs/frame`,
);
const rows: Record<string, number> = { face_us: Math.round(faceUs * 10) / 10 };
for (const size of [384, 512]) {
  const avatar = AVATARS.find((a) => a.size === size)!;
  const driver = new FaceDriver(2);
  const states = Array.from({ length: 500 }, (_, i) => {
    const s = driver.next(frameAt(i));
    return structuredClone(s);
  });
  const drawUs = time((i) => {
    const f = createFrame(size, size);
    drawAvatar(f, avatar, BACKGROUNDS[0], states[i % states.length]);
  });
  const perCore = (faceUs + drawUs) * 25 * 24 / 1e6;
  console.log(
    `${size}×${size} draw: ${
      drawUs.toFixed(1)
    } µs/frame; face + draw for 24 sessions at 25 fps: ${
      (perCore * 100).toFixed(1)
    } % of one core`,
  );
  rows[`draw_${size}_us`] = Math.round(drawUs * 10) / 10;
}
Object.assign(rows, await photoVsCartoon(frameAt));
console.log(`RESULT ${JSON.stringify(rows)}`);
