/**
 * bench:render's photo part: the photo painter (lib/render/photo/) on the test
 * portrait, prepared as an upload is (square, and in the portrait framing, 720×1280),
 * beside the 512×512 cartoon, frame by frame on the same speech: ms per frame p50 and
 * p95 of single frames (after a warm-up).
 */
import { AVATARS, BACKGROUNDS } from "../lib/avatars.ts";
import { preparePhoto } from "../lib/photo/mod.ts";
import { drawAvatar } from "../lib/render/draw.ts";
import { FaceDriver, type FaceState } from "../lib/render/face.ts";
import type { Painter } from "../lib/render/painter.ts";
import { createPhotoPainter } from "../lib/render/photo/mod.ts";
import { createFrame } from "../lib/render/raster.ts";

const PORTRAIT = new URL(
  "../tests/fixtures/photo/grace_hopper.jpg",
  import.meta.url,
);
const FRAMES = 1000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** p50 and p95 (ms) of `paint` over `FRAMES` frames after 200 unmeasured ones. */
function perFrame(
  states: Array<{ state: FaceState; weights: Float64Array }>,
  paint: (s: FaceState, w: Float64Array) => void,
): { p50: number; p95: number } {
  const ms: number[] = [];
  for (let i = 0; i < FRAMES + 200; i++) {
    const { state, weights } = states[i % states.length];
    const t0 = performance.now();
    paint(state, weights);
    if (i >= 200) ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 0.5), p95: percentile(ms, 0.95) };
}

/** Runs the comparison, prints it, and returns its RESULT fields. */
export async function photoVsCartoon(
  frameAt: (i: number) => Int16Array,
): Promise<Record<string, number>> {
  const t0 = performance.now();
  const avatar = await preparePhoto(await Deno.readFile(PORTRAIT), {
    avatarId: "ph_BENCH00000000000000000000",
    tenantId: "bench",
    name: "Grace",
    createdAt: 0,
  });
  const prepareMs = performance.now() - t0;
  const driver = new FaceDriver(4);
  const states = Array.from({ length: 500 }, (_, i) => {
    const state = structuredClone(driver.next(frameAt(i)));
    return { state, weights: driver.weights.slice() };
  });
  const size = 512;
  const frame = createFrame(size, size);
  const cartoon = AVATARS.find((a) => a.size === size)!;
  const rows: Array<[string, { p50: number; p95: number }]> = [
    [
      "cartoon",
      perFrame(states, (s) => drawAvatar(frame, cartoon, BACKGROUNDS[0], s)),
    ],
  ];
  const alpha = new Uint8Array(size * size);
  const photo = (p: Painter, withAlpha = false) =>
    perFrame(states, (s, w) => {
      p.paint(frame, s, w);
      if (withAlpha) p.paintAlpha!(alpha);
    });
  rows.push(["photo", photo(createPhotoPainter(avatar, { bg: null }))]);
  rows.push([
    `photo on ${BACKGROUNDS[0].id}`,
    photo(createPhotoPainter(avatar, { bg: BACKGROUNDS[0] })),
  ]);
  rows.push([
    "photo transparent (+alpha)",
    photo(createPhotoPainter(avatar, { bg: "transparent" }), true),
  ]);
  // The same portrait in the portrait framing, painted at its own size.
  const tall = await preparePhoto(await Deno.readFile(PORTRAIT), {
    avatarId: "ph_BENCH00000000000000000001",
    tenantId: "bench",
    name: "Grace",
    createdAt: 0,
    framing: "portrait",
  });
  const tallFrame = createFrame(tall.width, tall.height);
  const tallPainter = createPhotoPainter(tall, { bg: null });
  rows.push([
    `photo ${tall.width}×${tall.height}`,
    perFrame(states, (s, w) => tallPainter.paint(tallFrame, s, w)),
  ]);
  console.log(
    `\n${size}×${size} ms/frame (single frames, ${FRAMES} after a warm-up); portrait prepared in ${
      prepareMs.toFixed(0)
    } ms (once, at upload, models loading included)`,
  );
  console.log("painter                       p50     p95");
  for (const [name, r] of rows) {
    console.log(
      `${name.padEnd(28)} ${r.p50.toFixed(2).padStart(6)}  ${
        r.p95.toFixed(2).padStart(6)
      }`,
    );
  }
  const out: Record<string, number> = {};
  const key = [
    "cartoon_512",
    "photo_512",
    "photo_bg_512",
    "photo_transparent_512",
    "photo_720x1280",
  ];
  rows.forEach(([, r], i) => {
    out[`${key[i]}_p50_ms`] = Math.round(r.p50 * 100) / 100;
    out[`${key[i]}_p95_ms`] = Math.round(r.p95 * 100) / 100;
  });
  return out;
}
