/** A prepared avatar as a PNG, for the console's preview (BT.601 limited range back to RGB). */
import { encode as encodePng } from "fast-png";
import { administers, type Administrator } from "../principal.ts";
import type { PhotoAvatar } from "../render/photo/types.ts";
import { previewCacheOf } from "./preview_cache.ts";
import { getPhotoManifest, readPhotoAvatar } from "./store.ts";

/**
 * The avatar's crop (`i420`, its framing's size) as RGB, inverting
 * lib/render/raster.ts's `toYuv`.
 */
export function i420ToRgb(
  i420: Uint8Array,
  width: number,
  height: number,
): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  const cw = width >> 1;
  const uOff = width * height;
  const vOff = uOff + cw * (height >> 1);
  const byte = (v: number) => Math.min(255, Math.max(0, Math.round(v)));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const c = (y >> 1) * cw + (x >> 1);
      const l = 1.164 * (i420[y * width + x] - 16);
      const u = i420[uOff + c] - 128;
      const v = i420[vOff + c] - 128;
      const o = (y * width + x) * 3;
      rgb[o] = byte(l + 1.596 * v);
      rgb[o + 1] = byte(l - 0.392 * u - 0.813 * v);
      rgb[o + 2] = byte(l + 2.017 * u);
    }
  }
  return rgb;
}

/** A preview as the console serves it. */
export interface PhotoPreview {
  /** Strong validator: the stored avatar's SHA-256, quoted. */
  etag: string;
  /** The PNG; null when `ifNoneMatch` named this `etag` (the caller's copy is current). */
  png: Uint8Array | null;
}

/**
 * `tenantId`'s avatar `avatarId` as a PNG, as `by` may see it: null when there is none,
 * or it is another tenant's for a tenant administrator. Built once per KV handle
 * (lib/photo/preview_cache.ts); each call reads the manifest, so a removed avatar is
 * not found, and answers without the PNG when `ifNoneMatch` holds its ETag.
 */
export async function photoPreview(
  kv: Deno.Kv,
  by: Administrator,
  tenantId: string,
  avatarId: string,
  ifNoneMatch: string | null = null,
): Promise<PhotoPreview | null> {
  if (!administers(by, tenantId)) return null;
  const cache = previewCacheOf(kv);
  const manifest = await getPhotoManifest(kv, tenantId, avatarId);
  if (!manifest) {
    cache.forget(tenantId, avatarId); // removed on another instance
    return null;
  }
  const etag = `"${manifest.sha256}"`;
  if (matches(ifNoneMatch, etag)) return { etag, png: null };
  const png = await cache.get(tenantId, avatarId, etag, async () => {
    const avatar = await readPhotoAvatar(kv, tenantId, avatarId);
    return avatar ? photoPreviewPng(avatar) : null;
  });
  return png ? { etag, png } : null;
}

/** Whether an `If-None-Match` value names `etag` (or is `*`). */
function matches(header: string | null, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((t) => {
    const tag = t.trim().replace(/^W\//, "");
    return tag === "*" || tag === etag;
  });
}

/** The avatar's crop as a PNG image. */
export function photoPreviewPng(avatar: PhotoAvatar): Uint8Array {
  const { width, height } = avatar;
  return encodePng({
    width,
    height,
    data: i420ToRgb(avatar.i420, width, height),
    channels: 3,
    depth: 8,
  });
}
