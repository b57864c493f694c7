import assert from "node:assert/strict";
import { AVATARS, BACKGROUNDS } from "../../../lib/avatars.ts";
import {
  createFrame,
  drawAvatar,
  type FaceState,
  type Frame,
  mouthRegion,
  toYuv,
} from "../../../lib/render/draw.ts";
import { FaceDriver, restingFace } from "../../../lib/render/face.ts";
import { STREAM_RATE } from "../../../lib/render/voice.ts";
import { tone } from "./_helpers.ts";

const W = 384;
const H = 384;
const still: FaceState = restingFace();

function draw(state: Partial<FaceState>, avatar = AVATARS[0]): Frame {
  const f = createFrame(W, H);
  drawAvatar(f, avatar, BACKGROUNDS[0], { ...still, ...state });
  return f;
}

/** Sum of absolute luma differences inside a rectangle. */
function lumaDiff(
  a: Frame,
  b: Frame,
  r: { x: number; y: number; w: number; h: number },
): number {
  let d = 0;
  for (let y = r.y; y < r.y + r.h; y++) {
    for (let x = r.x; x < r.x + r.w; x++) {
      d += Math.abs(a.data[y * W + x] - b.data[y * W + x]);
    }
  }
  return d;
}

/** The mouth driven by audio, as the render loop does it (40-ms frames). */
function mouthAfter(samples: Int16Array): FaceState["mouth"] {
  const face = new FaceDriver(7);
  const per = STREAM_RATE / 25;
  for (let at = 0; at + per <= samples.length; at += per) {
    face.next(samples.subarray(at, at + per));
  }
  return { ...face.state.mouth };
}

Deno.test("drawAvatar()", async (t) => {
  const mouth = mouthRegion(W, H);
  const whole = { x: 0, y: 0, w: W, h: H };

  await t.step("a loud tone opens the mouth; silence keeps it shut", () => {
    const loud = mouthAfter(tone(0.2, STREAM_RATE));
    const quiet = mouthAfter(new Int16Array(STREAM_RATE / 5));
    assert.ok(loud.open > 0.3, `open ${loud.open}`);
    assert.equal(quiet.open, 0);
    const a = draw({ mouth: loud });
    const b = draw({ mouth: quiet });
    const inMouth = lumaDiff(a, b, mouth);
    assert.ok(inMouth > 2000, `mouth diff ${inMouth}`);
    // Only the mouth, jaw and cheeks changed: the rest is equal.
    const above = { x: 0, y: 0, w: W, h: Math.round(H * 0.3) };
    const below = {
      x: 0,
      y: mouth.y + mouth.h,
      w: W,
      h: H - mouth.y - mouth.h,
    };
    assert.equal(lumaDiff(a, b, above), 0);
    assert.equal(lumaDiff(a, b, below), 0);
  });

  await t.step("a blink closes the eyes", () => {
    const eyes = {
      x: 0,
      y: Math.round(H * 0.3),
      w: W,
      h: Math.round(H * 0.12),
    };
    assert.ok(lumaDiff(draw({ blink: 1 }), draw({ blink: 0 }), eyes) > 1000);
  });

  await t.step("the breath, head motion and gaze move the avatar", () => {
    assert.ok(lumaDiff(draw({ t: 0 }), draw({ t: 1.7 }), whole) > 1000);
    const moved = draw({
      head: { x: 0.01, y: 0.005, tilt: 0.03, yaw: 0, pitch: 0 },
    });
    assert.ok(lumaDiff(draw({}), moved, whole) > 5000);
    const eyes = {
      x: 0,
      y: Math.round(H * 0.3),
      w: W,
      h: Math.round(H * 0.12),
    };
    const look = draw({ gaze: { x: 1, y: 0 } });
    assert.ok(lumaDiff(draw({}), look, eyes) > 500);
    assert.equal(lumaDiff(draw({}), look, mouth), 0);
  });

  await t.step("raised brows change only the brow rows", () => {
    const brows = {
      x: 0,
      y: Math.round(H * 0.33),
      w: W,
      h: Math.round(H * 0.055),
    };
    const up = draw({ brow: 1 });
    assert.ok(lumaDiff(draw({}), up, brows) > 500);
    assert.equal(lumaDiff(draw({}), up, mouth), 0);
  });

  await t.step("every avatar and background draws its own colours", () => {
    for (const bg of BACKGROUNDS) {
      const f = createFrame(W, H);
      drawAvatar(f, AVATARS[0], bg, still);
      assert.equal(f.data[0], Math.round(toYuv(bg.top).y));
    }
    const frames = AVATARS.map((a) => draw({}, a));
    assert.ok(lumaDiff(frames[0], frames[1], whole) > 10000);
    assert.ok(lumaDiff(frames[1], frames[2], whole) > 10000);
  });

  await t.step("drawing is deterministic for a given state", () => {
    assert.deepEqual(
      draw({ t: 2.3, brow: 0.4 }).data,
      draw({ t: 2.3, brow: 0.4 }).data,
    );
  });
});
