/** Test images made from the fixtures: decoded, composed, rotated, encoded again. */
import { encode as encodePng } from "fast-png";
import assert from "node:assert/strict";
import { decodePhoto, type RgbImage } from "../../../lib/photo/decode.ts";
import { PhotoRefusal } from "../../../lib/photo/refusal.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { addPhotoAvatar } from "../../../lib/photo/store.ts";

export const FIXTURES = new URL("../../fixtures/photo/", import.meta.url);

export function fixtureBytes(name: string): Uint8Array {
  return Deno.readFileSync(new URL(name, FIXTURES));
}

export function fixture(name: string): RgbImage {
  return decodePhoto(fixtureBytes(name));
}

export function png(image: RgbImage): Uint8Array {
  return encodePng({
    width: image.width,
    height: image.height,
    data: image.data,
    channels: 3,
    depth: 8,
  });
}

/** `a` and `b` side by side on a white canvas as tall as the taller. */
export function sideBySide(a: RgbImage, b: RgbImage): RgbImage {
  const width = a.width + b.width;
  const height = Math.max(a.height, b.height);
  const data = new Uint8Array(width * height * 3).fill(255);
  for (const [img, x0] of [[a, 0], [b, a.width]] as const) {
    for (let y = 0; y < img.height; y++) {
      data.set(
        img.data.subarray(y * img.width * 3, (y + 1) * img.width * 3),
        (y * width + x0) * 3,
      );
    }
  }
  return { width, height, data };
}

/** `image` rotated by `deg` about its centre (nearest pixel), white outside. */
export function rotate(image: RgbImage, deg: number): RgbImage {
  const { width, height } = image;
  const data = new Uint8Array(image.data.length).fill(255);
  const c = Math.cos(deg * Math.PI / 180), s = Math.sin(deg * Math.PI / 180);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dx = x - width / 2, dy = y - height / 2;
      const sx = Math.round(c * dx + s * dy + width / 2);
      const sy = Math.round(-s * dx + c * dy + height / 2);
      if (sx < 0 || sy < 0 || sx >= width || sy >= height) continue;
      data.set(
        image.data.subarray((sy * width + sx) * 3, (sy * width + sx) * 3 + 3),
        (y * width + x) * 3,
      );
    }
  }
  return { width, height, data };
}

/** The part of `image` inside the rectangle. */
export function crop(
  image: RgbImage,
  x: number,
  y: number,
  w: number,
  h: number,
): RgbImage {
  const data = new Uint8Array(w * h * 3);
  for (let r = 0; r < h; r++) {
    const s = ((y + r) * image.width + x) * 3;
    data.set(image.data.subarray(s, s + w * 3), r * w * 3);
  }
  return { width: w, height: h, data };
}

/** The refusal `p` rejects with (fails when it resolves or throws something else). */
export async function refusal(p: Promise<unknown>): Promise<PhotoRefusal> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof PhotoRefusal, `a PhotoRefusal, not ${e}`);
    return e;
  }
  assert.fail("resolved instead of refusing");
}

/** The refusal message `fn` throws (fails when it returns or throws something else). */
export function refusedSync(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof PhotoRefusal, `a PhotoRefusal, not ${e}`);
    return e.message;
  }
  assert.fail("accepted");
}

export const HOPPER = fixtureBytes("grace_hopper.jpg");

/** A photo store on `:memory:` KV with a clock one ms a call, disposed with `await using`. */
export async function setup(max = 20) {
  const kv = await Deno.openKv(":memory:");
  let t = Date.UTC(2026, 10, 26);
  const deps = { kv, now: () => t++, config: { avatarStoreMaxPerTenant: max } };
  return { kv, deps, [Symbol.asyncDispose]: () => Promise.resolve(kv.close()) };
}

/** Adds the Hopper portrait as the operator for tenant `acme`, `over` changing any input. */
export const add = (
  deps: Parameters<typeof addPhotoAvatar>[0],
  over: Partial<Parameters<typeof addPhotoAvatar>[2]> = {},
) =>
  addPhotoAvatar(deps, OPERATOR, {
    tenantId: "acme",
    name: "Grace",
    bytes: HOPPER,
    consentBy: "cli",
    ...over,
  });

/**
 * `image` in the middle of a `width`×`height` canvas, its edge pixels carried out to the
 * canvas's edges: a portrait with room around the face (for the wide framings).
 */
export function widen(
  image: RgbImage,
  width: number,
  height: number,
): RgbImage {
  const data = new Uint8Array(width * height * 3);
  const x0 = Math.round((width - image.width) / 2);
  const y0 = Math.round((height - image.height) / 2);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(image.height - 1, Math.max(0, y - y0));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(image.width - 1, Math.max(0, x - x0));
      const s = (sy * image.width + sx) * 3;
      data.set(image.data.subarray(s, s + 3), (y * width + x) * 3);
    }
  }
  return { width, height, data };
}
