/**
 * Photo avatars as a media node reads them: one KV read per avatar per instance, then
 * from memory (a bounded, least-recently-used cache; concurrent loads share one read).
 */
import type { PhotoAvatar } from "../render/photo/types.ts";
import { readPhotoAvatar } from "./store.ts";

/** Avatars kept per KV handle: ~0.7 MB each. */
export const PHOTO_CACHE_MAX = 16;

const caches = new WeakMap<Deno.Kv, Map<string, Promise<PhotoAvatar | null>>>();

/**
 * `tenantId`'s photo avatar `avatarId`, or null when the tenant has none by that id. A
 * miss is not cached (the avatar may be added next); a removed avatar may stay cached,
 * so sessions already rendering it go on (create checks the store, not this cache).
 */
export function loadPhotoAvatar(
  kv: Deno.Kv,
  tenantId: string,
  avatarId: string,
): Promise<PhotoAvatar | null> {
  let cache = caches.get(kv);
  if (!cache) caches.set(kv, cache = new Map());
  const key = `${tenantId}\u0000${avatarId}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // most recently used goes last
    cache.set(key, hit);
    return hit;
  }
  const forget = () => {
    if (cache.get(key) === load) cache.delete(key);
  };
  const load: Promise<PhotoAvatar | null> = readPhotoAvatar(
    kv,
    tenantId,
    avatarId,
  ).then(
    (avatar) => {
      if (!avatar) forget();
      return avatar;
    },
    (e) => {
      forget();
      throw e;
    },
  );
  cache.set(key, load);
  while (cache.size > PHOTO_CACHE_MAX) cache.delete(cache.keys().next().value!);
  return load;
}
