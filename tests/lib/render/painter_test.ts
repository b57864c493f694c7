import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { createBuiltinRenderer } from "../../../lib/render/builtin.ts";
import type { Painter, PainterSource } from "../../../lib/render/painter.ts";
import {
  type RenderOpenOptions,
  RenderStartError,
} from "../../../lib/ports/render.ts";
import {
  assertNoEncoders,
  ManualClock,
  RecordingSink,
  videoSize,
} from "./_helpers.ts";

/** A painter that fills every frame with one grey and counts its calls. */
function greyPainter(width: number, height: number) {
  const calls: Float64Array[] = [];
  const painter: Painter = {
    width,
    height,
    paint(f, _state, weights) {
      f.data.fill(100, 0, width * height);
      f.data.fill(128, width * height);
      calls.push(weights.slice());
    },
  };
  return { painter, calls };
}

function renderer(painters: PainterSource) {
  const onClose: Array<() => void | Promise<void>> = [];
  const clock = new ManualClock();
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    clock,
    painters,
  });
  return { backend, clock };
}

Deno.test("builtin renderer painters", async (t) => {
  await t.step(
    "a painter source is asked first, with the tenant, and sets the frame size",
    async () => {
      const asked: RenderOpenOptions[] = [];
      const grey = greyPainter(64, 48);
      const { backend, clock } = renderer((o) => {
        asked.push(o);
        return Promise.resolve(
          o.avatarId === "ph_X" ? grey.painter : undefined,
        );
      });
      const session = await backend.open({
        sessionId: "session:p",
        tenantId: "acme",
        avatarId: "ph_X",
        bgId: "photo",
      });
      const sink = new RecordingSink();
      session.attach(sink);
      for (let i = 0; i < 10; i++) clock.advance(40);
      await sink.until(() => sink.inits.length === 1);
      assert.equal(videoSize(sink.inits[0].init), "64x48");
      assert.ok(grey.calls.length > 0);
      assert.equal(grey.calls[0].length, 15, "one weight per viseme");
      assert.deepEqual(asked.map((o) => [o.tenantId, o.avatarId]), [[
        "acme",
        "ph_X",
      ]]);
      await session.stop({ graceful: false, timeoutMs: 0 });
    },
  );

  await t.step(
    "an id the source does not own opens the catalog's cartoon",
    async () => {
      const { backend, clock } = renderer(() => Promise.resolve(undefined));
      const session = await backend.open({
        sessionId: "session:c",
        avatarId: "ava",
        bgId: "studio",
      });
      const sink = new RecordingSink();
      session.attach(sink);
      for (let i = 0; i < 10; i++) clock.advance(40);
      await sink.until(() => sink.inits.length === 1);
      assert.equal(videoSize(sink.inits[0].init), "384x384");
      await session.stop({ graceful: false, timeoutMs: 0 });
    },
  );

  await t.step(
    "listen(true) makes the painted head nod; listen(false) lets it rest",
    async () => {
      const pitch: number[] = [];
      const painter: Painter = {
        width: 64,
        height: 48,
        paint(f, state) {
          f.data.fill(100);
          pitch.push(state.head.pitch);
        },
      };
      const { backend, clock } = renderer(() => Promise.resolve(painter));
      const session = await backend.open({
        sessionId: "session:l",
        avatarId: "ph_L",
        bgId: "photo",
      });
      const sink = new RecordingSink();
      session.attach(sink);
      const range = (v: number[]) => Math.max(...v) - Math.min(...v);
      // A watched session paints: time goes on as the encoder keeps up (one
      // fragment a frame), never more than 25 frames ahead of it.
      let frames = sink.segments.length;
      const run = async (n: number) => {
        for (let i = 0; i < n; i++) {
          clock.advance(40);
          frames++;
          if (i % 10 === 9) {
            await sink.until(() => sink.segments.length >= frames - 25);
          }
        }
      };
      for (let i = 0; i < 10; i++) clock.advance(40);
      await sink.until(() => sink.inits.length === 1);
      pitch.length = 0;
      await run(250);
      const idle = pitch.splice(0);
      session.listen(true);
      await run(250);
      const heard = pitch.splice(0);
      assert.ok(
        idle.length > 200 && heard.length > 200,
        `frames ${idle.length}, ${heard.length}`,
      );
      // Resting: within ±0.009 rad; listening: nods of 0.03 rad and more.
      assert.ok(range(idle) < 0.02, `idle pitch range ${range(idle)}`);
      assert.ok(range(heard) >= 0.03, `listening pitch range ${range(heard)}`);
      session.listen(false);
      await run(250);
      const after = pitch.splice(0).slice(100);
      assert.ok(range(after) < 0.02, `rests again: ${range(after)}`);
      await session.stop({ graceful: false, timeoutMs: 0 });
    },
  );

  await t.step("a source's refusal is open()'s refusal", async () => {
    const { backend } = renderer(() =>
      Promise.reject(new RenderStartError("misconfigured", "no such photo"))
    );
    await assert.rejects(
      backend.open({ sessionId: "session:r", avatarId: "ph_Y", bgId: "x" }),
      (err) => err instanceof RenderStartError && err.kind === "misconfigured",
    );
  });
  assertNoEncoders();
});
