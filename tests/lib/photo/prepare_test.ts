import assert from "node:assert/strict";
import { LANDMARK_COUNT, PHOTO_SIZE } from "../../../lib/render/photo/types.ts";
import { preparePhoto } from "../../../lib/photo/mod.ts";
import { checkFace, rgbToI420 } from "../../../lib/photo/prepare.ts";
import { i420ToRgb } from "../../../lib/photo/preview.ts";
import { resample } from "../../../lib/photo/resample.ts";
import { withPhotoSlot } from "../../../lib/photo/worker.ts";
import { toYuv } from "../../../lib/render/raster.ts";
import {
  crop,
  fixture,
  fixtureBytes,
  png,
  refusal,
  rotate,
  sideBySide,
  widen,
} from "./_helpers.ts";

const meta = {
  avatarId: "ph_01JAAAAAAAAAAAAAAAAAAAAAAA",
  tenantId: "acme",
  name: "Grace",
  createdAt: 1,
};

/** `a` resampled to twice its width and height. */
function doubled(a: ReturnType<typeof fixture>) {
  const whole = { x: 0, y: 0, w: a.width, h: a.height };
  const [width, height] = [a.width * 2, a.height * 2];
  return {
    width,
    height,
    data: resample(a.data, a.width, a.height, 3, whole, width, height),
  };
}

function point(l: Float32Array, i: number) {
  return { x: l[i * 3], y: l[i * 3 + 1], z: l[i * 3 + 2] };
}

Deno.test("preparePhoto() turns the Hopper portrait into a 512×512 avatar with its mesh and mask", async () => {
  const a = await preparePhoto(fixtureBytes("grace_hopper.jpg"), meta);
  assert.deepEqual([a.avatarId, a.tenantId, a.name, a.createdAt], [
    meta.avatarId,
    "acme",
    "Grace",
    1,
  ]);
  assert.deepEqual([a.width, a.height], [PHOTO_SIZE, PHOTO_SIZE]);
  assert.deepEqual(a.i420.length, PHOTO_SIZE * PHOTO_SIZE * 3 / 2);
  assert.deepEqual(a.alpha.length, PHOTO_SIZE * PHOTO_SIZE);
  assert.deepEqual(a.landmarks.length, LANDMARK_COUNT * 3);
  const l = a.landmarks;
  for (let i = 0; i < LANDMARK_COUNT; i++) {
    const p = point(l, i);
    assert(
      p.x > 0 && p.x < PHOTO_SIZE && p.y > 0 && p.y < PHOTO_SIZE,
      `landmark ${i} inside the crop`,
    );
  }
  // The face is centred across and about as wide as the crop's 1/2.4.
  const left = point(l, 234), right = point(l, 454);
  assert(Math.abs((left.x + right.x) / 2 - PHOTO_SIZE / 2) < 20);
  assert(
    right.x - left.x > 160 && right.x - left.x < 260,
    `face width ${right.x - left.x}`,
  );
  // Eyes above the nose tip above the mouth above the chin; the right eye (33) on the image's left.
  const eyeY = (point(l, 33).y + point(l, 263).y) / 2;
  assert(
    eyeY < point(l, 1).y && point(l, 1).y < point(l, 13).y &&
      point(l, 13).y < point(l, 152).y,
  );
  assert(point(l, 33).x < point(l, 263).x);
  // Irises in MediaPipe's order: 468 (right) between 33 and 133, 473 (left) between 362 and 263.
  assert(point(l, 468).x > point(l, 33).x && point(l, 468).x < point(l, 133).x);
  assert(
    point(l, 473).x > point(l, 362).x && point(l, 473).x < point(l, 263).x,
  );
  // The nose tip is nearer the camera than the cheeks.
  assert(point(l, 1).z < point(l, 234).z && point(l, 1).z < point(l, 454).z);
  // The mask covers the face and the chest, not the top corners (flag and blue backdrop).
  const alphaAt = (x: number, y: number) =>
    a.alpha[Math.round(y) * PHOTO_SIZE + Math.round(x)];
  assert(alphaAt(point(l, 1).x, point(l, 1).y) > 200);
  assert(alphaAt(PHOTO_SIZE / 2, PHOTO_SIZE - 10) > 200);
  assert(alphaAt(10, 10) < 30 && alphaAt(PHOTO_SIZE - 10, 10) < 30);
  // Her skin is lighter than her dark jacket at the bottom corners (Y plane).
  const y = (x: number, yy: number) =>
    a.i420[Math.round(yy) * PHOTO_SIZE + Math.round(x)];
  assert(y(point(l, 1).x, point(l, 1).y - 20) > y(60, PHOTO_SIZE - 5) + 50);
});

Deno.test("preparePhoto() frames landscape and portrait around the face, a third of the height; one without the room is refused", async (t) => {
  const hopper = fixture("grace_hopper.jpg");
  const roomy = png(widen(hopper, 1400, 800));
  const faceShare = (l: Float32Array, h: number) =>
    (point(l, 152).y - point(l, 10).y) / h;
  for (
    const [framing, bytes, w, h] of [
      ["landscape", roomy, 1280, 720],
      ["portrait", fixtureBytes("grace_hopper.jpg"), 720, 1280],
    ] as const
  ) {
    await t.step(`${framing}: ${w}×${h}`, async () => {
      const a = await preparePhoto(bytes, { ...meta, framing });
      assert.deepEqual([a.width, a.height], [w, h]);
      assert.equal(a.i420.length, w * h * 3 / 2);
      assert.equal(a.alpha.length, w * h);
      const l = a.landmarks;
      for (let i = 0; i < LANDMARK_COUNT; i++) {
        const p = point(l, i);
        assert(p.x > 0 && p.x < w && p.y > 0 && p.y < h, `landmark ${i}`);
      }
      // The face (its mesh, brow to chin) about a third of the height, centred
      // across, in the upper half.
      const share = faceShare(l, h);
      assert(share > 0.27 && share < 0.4, `face ${share.toFixed(2)} of it`);
      const cx = (point(l, 234).x + point(l, 454).x) / 2;
      assert(Math.abs(cx - w / 2) < 0.05 * w, `face centre at ${cx}`);
      const cy = (point(l, 10).y + point(l, 152).y) / 2;
      assert(cy > 0.3 * h && cy < 0.55 * h, `face centre at ${cy} of ${h}`);
      // The mask covers the face.
      assert(
        a.alpha[Math.round(point(l, 1).y) * w + Math.round(point(l, 1).x)] >
          200,
      );
    });
  }
  await t.step("landscape from a portrait photo: not enough room", async () => {
    const e = await refusal(
      preparePhoto(fixtureBytes("grace_hopper.jpg"), {
        ...meta,
        framing: "landscape",
      }),
    );
    assert.equal(e.message, "not enough room around the face for landscape");
  });
});

Deno.test("preparePhoto() refuses each bad portrait with its cause", async (t) => {
  const hopper = fixture("grace_hopper.jpg");
  const astronaut = fixture("astronaut.png");
  const cases: [string, Uint8Array, string][] = [
    [
      "a text file",
      new TextEncoder().encode("hello, not a picture"),
      "not a JPEG or PNG",
    ],
    [
      "a truncated JPEG",
      fixtureBytes("grace_hopper.jpg").slice(0, 20_000),
      "corrupted image",
    ],
    [
      "two portraits side by side",
      png(sideBySide(hopper, hopper)),
      "more than one face",
    ],
    [
      "no face (the shuttle model beside the astronaut)",
      png(crop(astronaut, 330, 0, 182, 300)),
      "no face found",
    ],
    ["a face 100 px wide", fixtureBytes("astronaut.png"), "face too small"],
    ["a head tilted by 35°", png(rotate(hopper, 35)), "head tilted too far"],
  ];
  for (const [name, bytes, cause] of cases) {
    await t.step(name, async () => {
      const e = await refusal(preparePhoto(bytes, meta));
      assert.deepEqual(e.message, cause);
      assert.deepEqual(e.retryable, false);
    });
  }
});

Deno.test("withPhotoSlot() runs one photo at a time and refuses as busy past its queue", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let running = 0, most = 0;
  const job = (tenantId: string) =>
    withPhotoSlot(tenantId, async () => {
      running++;
      most = Math.max(most, running);
      await gate;
      running--;
    });
  // Five tenants: one photo running, four waiting.
  const accepted = ["a", "b", "c", "d", "e"].map(job);
  const e = await refusal(job("f"));
  assert.deepEqual(e.message, "busy preparing other photos, try again");
  assert(e.retryable);
  // A photo is decoded in its turn only: a damaged scan is refused as busy, not decoded.
  const damaged = fixtureBytes("grace_hopper.jpg").slice(0, 20_000);
  assert.equal((await refusal(preparePhoto(damaged, meta))).message, e.message);
  // Its header is read at once: a text file is refused for what it is even now.
  assert.equal(
    (await refusal(preparePhoto(new TextEncoder().encode("hi"), meta))).message,
    "not a JPEG or PNG",
  );
  release();
  await Promise.all(accepted);
  assert.deepEqual(most, 1);
  await withPhotoSlot("f", () => Promise.resolve()); // free again
});

Deno.test("rgbToI420() converts as raster.ts's toYuv, chroma averaged per 2×2 block", () => {
  const rgb = new Uint8Array(4 * 2 * 3);
  const colours = [[200, 30, 40], [10, 220, 90], [0, 0, 0], [255, 255, 255]];
  // Left 2×2 block: two colours; right block: flat white.
  const put = (x: number, y: number, c: number[]) =>
    rgb.set(c, (y * 4 + x) * 3);
  put(0, 0, colours[0]);
  put(1, 0, colours[1]);
  put(0, 1, colours[0]);
  put(1, 1, colours[1]);
  for (const [x, y] of [[2, 0], [3, 0], [2, 1], [3, 1]]) put(x, y, colours[3]);
  const out = rgbToI420(rgb, 4, 2);
  const yuv0 = toYuv(colours[0] as [number, number, number]);
  assert.deepEqual(out[0], Math.round(yuv0.y));
  assert.deepEqual(out[3], Math.round(toYuv([255, 255, 255]).y)); // 235
  const mean = toYuv([105, 125, 65]);
  assert.deepEqual([out[8], out[10]], [Math.round(mean.u), Math.round(mean.v)]);
  assert.deepEqual([out[9], out[11]], [128, 128]);
});

Deno.test("i420ToRgb() inverts rgbToI420 within rounding on flat colours", () => {
  for (
    const c of [[200, 30, 40], [10, 220, 90], [128, 128, 128], [250, 240, 230]]
  ) {
    const rgb = new Uint8Array(4 * 4 * 3).map((_, i) => c[i % 3]);
    const back = i420ToRgb(rgbToI420(rgb, 4, 4), 4, 4);
    for (let i = 0; i < back.length; i++) {
      assert.ok(Math.abs(back[i] - rgb[i]) <= 2, `${c} → ${back.slice(0, 3)}`);
    }
  }
});

Deno.test("checkFace() takes the face's width in original pixels and bounds yaw, pitch and roll", async (t) => {
  /** A face whose mesh spans `width` px across, turned by the given degrees. */
  const face = (width: number, yaw = 0, pitch = 0, roll = 0) => {
    const mesh = new Float32Array(478 * 3);
    for (let i = 0; i < 478; i++) {
      mesh[i * 3] = 100 + (i % 2) * width;
      mesh[i * 3 + 1] = 100 + (i % 3) * 50;
    }
    const rad = (d: number) => d * Math.PI / 180;
    return {
      mesh,
      yaw: rad(yaw),
      pitch: rad(pitch),
      roll: rad(roll),
      score: 1,
    };
  };
  const cause = (fn: () => void) => {
    try {
      fn();
      return "accepted";
    } catch (e) {
      return (e as Error).message;
    }
  };
  const cases: [string, ReturnType<typeof face>, number, string][] = [
    ["160 px wide, frontal", face(160), 1, "accepted"],
    ["159 px wide", face(159), 1, "face too small"],
    ["80 px in a photo shrunk by 2 for the model", face(80), 2, "accepted"],
    ["yaw 29°", face(200, 29), 1, "accepted"],
    ["yaw -31°", face(200, -31), 1, "head turned too far"],
    ["pitch 24°", face(200, 0, 24), 1, "accepted"],
    ["pitch 26°", face(200, 0, 26), 1, "head turned too far"],
    ["roll 19°", face(200, 0, 0, 19), 1, "accepted"],
    ["roll -21°", face(200, 0, 0, -21), 1, "head tilted too far"],
  ];
  for (const [name, f, toOriginal, expected] of cases) {
    await t.step(name, () => {
      assert.equal(cause(() => checkFace(f, toOriginal)), expected);
    });
  }
});

Deno.test("preparePhoto() takes the astronaut PNG once her face is 200 px wide (×2)", async () => {
  const a = fixture("astronaut.png");
  const twice = doubled(a);
  const avatar = await preparePhoto(png(twice), meta);
  const l = avatar.landmarks;
  const nose = point(l, 1);
  assert.ok(Math.abs(nose.x - PHOTO_SIZE / 2) < 30, `nose at ${nose.x}`);
  assert.ok(point(l, 33).x < point(l, 263).x && point(l, 13).y > point(l, 1).y);
  assert.ok(
    avatar.alpha[Math.round(nose.y) * PHOTO_SIZE + Math.round(nose.x)] > 200,
  );
  assert.ok(avatar.alpha[5 * PHOTO_SIZE + 5] < 30);
});

Deno.test("preparePhoto() keeps the mesh's depth in the crop's pixels, whatever the photo's size", async () => {
  // Human scales the face mesh's x and y to the picture but leaves its depth in the
  // model's 192-px input: a face twice as large in the photo came out half as deep,
  // and a turned head's parallax with it.
  const a = fixture("grace_hopper.jpg");
  const twice = doubled(a);
  const depthShare = (l: Float32Array) => {
    const w = point(l, 454).x - point(l, 234).x;
    return ((point(l, 234).z + point(l, 454).z) / 2 - point(l, 1).z) / w;
  };
  const one = depthShare(
    (await preparePhoto(fixtureBytes("grace_hopper.jpg"), meta)).landmarks,
  );
  const two = depthShare((await preparePhoto(png(twice), meta)).landmarks);
  // A head's nose tip stands about 0.7 face widths before the face's sides.
  for (const d of [one, two]) {
    assert.ok(d > 0.55 && d < 0.9, `depth ${one}, ${two}`);
  }
  assert.ok(Math.abs(one - two) < 0.08, `depth ${one} at 1×, ${two} at 2×`);
});
