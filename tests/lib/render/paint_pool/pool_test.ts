/**
 * The paint pool (lib/render/paint_pool/): photo avatars painted on worker threads are
 * the in-process painter's pictures pixel for pixel; a worker that crashes or hangs is
 * replaced and its painters go on (their pending pictures reject); a painter on
 * workers that keep failing is closed; closing the pool ends every worker.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../../lib/log.ts";
import {
  MAX_FAILURES,
  PaintPool,
} from "../../../../lib/render/paint_pool/pool.ts";
import { openPhotoPainter } from "../../../../lib/render/photo/painter.ts";
import { createFrame } from "../../../../lib/render/raster.ts";
import { stackAlpha } from "../../../../lib/render/stacked.ts";
import { visemeIndex } from "../../../../lib/render/visemes.ts";
import { faceWith, smileAvatar, testAvatar } from "../photo/_avatar.ts";

const avatar = await testAvatar();

/** Faces of a few frames: rest, an open vowel with a blink, a turned head. */
const faces = [
  faceWith({}),
  faceWith({ [visemeIndex("aa")]: 1 }, { blink: 0.7 }),
  faceWith({ [visemeIndex("O")]: 0.6 }, {
    head: { x: 0.01, y: -0.01, tilt: 0.03, yaw: 0.12, pitch: -0.05 },
  }),
];

Deno.test("pictures painted on the pool's workers are the in-process painter's, pixel for pixel (own, catalog and transparent backgrounds)", async () => {
  const pool = new PaintPool({ log: memoryLogger(), size: 2 });
  try {
    for (const bgId of ["", "studio", "transparent"]) {
      const local = openPhotoPainter(avatar, bgId, 7);
      const remote = (await pool.open(avatar, bgId, 7))!;
      assert.ok(remote, "a worker started");
      assert.equal(remote.alpha, bgId === "transparent");
      for (const { state, weights } of faces) {
        const f = createFrame(local.width, local.height);
        local.paint(f, state, weights);
        let want = f.data;
        if (bgId === "transparent") {
          const a = new Uint8Array(f.width * f.height);
          local.paintAlpha!(a);
          want = stackAlpha(f, a);
        }
        const got = await remote.picture(state, weights);
        assert.equal(got.length, want.length);
        assert.ok(
          got.every((v, i) => v === want[i]),
          `${bgId || "own"}: a pixel differs`,
        );
      }
      remote.close();
    }
  } finally {
    pool.close();
  }
});

Deno.test("a worker that crashes is replaced: the pending picture rejects, the painters on it paint on, the process goes on", async () => {
  const log = memoryLogger();
  const pool = new PaintPool({ log, size: 1 });
  try {
    const a = (await pool.open(avatar, "", 1))!;
    const b = (await pool.open(avatar, "studio", 2))!;
    const { state, weights } = faces[1];
    await a.picture(state, weights);
    pool.fault(a, "crash");
    // Asked after the fault: the worker dies before it answers.
    await assert.rejects(a.picture(state, weights), /paint worker crashed/);
    assert.equal(pool.restarts, 1);
    assert.ok(!a.failed && !b.failed);
    // Both open again on the new worker and paint.
    const [pa, pb] = await Promise.all([
      a.picture(state, weights),
      b.picture(state, weights),
    ]);
    assert.equal(pa.length, avatar.width * avatar.height * 3 / 2);
    assert.equal(pb.length, pa.length);
    assert.ok(log.lines.some((l) => l.includes("paint worker replaced")));
  } finally {
    pool.close();
  }
});

Deno.test("a worker that hangs is ended after hangMs and replaced; its painters paint on", async () => {
  const pool = new PaintPool({ log: memoryLogger(), size: 1, hangMs: 300 });
  try {
    const a = (await pool.open(avatar, "", 1))!;
    const { state, weights } = faces[0];
    pool.fault(a, "hang");
    const t0 = performance.now();
    await assert.rejects(a.picture(state, weights), /paint worker hung/);
    const waited = performance.now() - t0;
    assert.ok(waited >= 300, `rejected after ${waited.toFixed(0)} ms`);
    assert.equal(pool.restarts, 1);
    const p = await a.picture(state, weights);
    assert.equal(p.length, avatar.width * avatar.height * 3 / 2);
  } finally {
    pool.close();
  }
});

Deno.test("pictures waiting behind a slow open are not taken for a hung worker", async () => {
  const pool = new PaintPool({ log: memoryLogger(), size: 1, hangMs: 300 });
  try {
    const a = (await pool.open(avatar, "", 1))!;
    const { state, weights } = faces[0];
    await a.picture(state, weights);
    // Another painter opens (a second longer than hangMs) while a's picture waits.
    pool.fault(a, "slow-open");
    const opening = pool.open(await smileAvatar(), "studio", 2);
    const picture = a.picture(state, weights);
    const b = (await opening)!;
    await picture;
    await b.picture(state, weights);
    // (Before: the open and the picture behind it were late by hangMs: replaced.)
    assert.equal(pool.restarts, 0);
  } finally {
    pool.close();
  }
});

Deno.test(`a painter on ${MAX_FAILURES} failed workers is closed; another one opened after it paints`, async () => {
  const pool = new PaintPool({ log: memoryLogger(), size: 1 });
  try {
    const a = (await pool.open(avatar, "", 1))!;
    const { state, weights } = faces[0];
    for (let k = 0; k < MAX_FAILURES; k++) {
      await a.picture(state, weights);
      pool.fault(a, "crash");
      await assert.rejects(a.picture(state, weights));
    }
    assert.ok(a.failed, "closed after its third failed worker");
    await assert.rejects(a.picture(state, weights), /closed/);
    const b = (await pool.open(avatar, "", 2))!;
    await b.picture(state, weights);
  } finally {
    pool.close();
  }
});

Deno.test("closing the pool rejects pending pictures, opens under way and later opens; an unknown background is refused at open", async () => {
  const pool = new PaintPool({ log: memoryLogger(), size: 2 });
  await assert.rejects(
    pool.open(avatar, "no-such-bg", 1),
    /unknown background/,
  );
  const a = (await pool.open(avatar, "", 1))!;
  const { state, weights } = faces[0];
  const pending = a.picture(state, weights);
  const opening = pool.open(avatar, "studio", 2);
  pool.close();
  await assert.rejects(pending, /closed/);
  await assert.rejects(opening, /closed/);
  assert.ok(a.failed);
  await assert.rejects(pool.open(avatar, "", 1), /closed/);
});
