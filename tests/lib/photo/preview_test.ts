import assert from "node:assert/strict";
import { decode as decodePng } from "fast-png";
import { type Administrator, OPERATOR } from "../../../lib/principal.ts";
import { photoPreview, removePhotoAvatar } from "../../../lib/photo/mod.ts";
import {
  PreviewCache,
  previewCacheOf,
} from "../../../lib/photo/preview_cache.ts";
import { add, setup } from "./_helpers.ts";

Deno.test("photoPreview() builds each avatar's preview once, answers a current ETag without it, and forgets it when the avatar is removed", async () => {
  await using s = await setup();
  const avatar = await add(s.deps);
  const id = avatar.avatarId;
  const cache = previewCacheOf(s.kv);
  const first = await photoPreview(s.kv, OPERATOR, "acme", id);
  assert.ok(first?.png);
  assert.match(first.etag, /^"[0-9a-f]{64}"$/);
  const png = decodePng(first.png);
  assert.deepEqual([png.width, png.height, png.channels], [512, 512, 3]);
  assert.deepEqual([cache.builds, cache.size], [1, 1]);
  assert.equal(cache.bytes, first.png.length);

  // Again, and many at once: from memory, the same bytes, no build.
  const again = await Promise.all(
    Array.from({ length: 5 }, () => photoPreview(s.kv, OPERATOR, "acme", id)),
  );
  for (const p of again) assert.equal(p?.png, first.png);
  assert.equal(cache.builds, 1);

  // The browser's copy is current: no PNG.
  assert.deepEqual(
    await photoPreview(s.kv, OPERATOR, "acme", id, first.etag),
    { etag: first.etag, png: null },
  );
  assert.deepEqual(
    await photoPreview(s.kv, OPERATOR, "acme", id, `"other", ${first.etag}`),
    { etag: first.etag, png: null },
  );
  assert.ok((await photoPreview(s.kv, OPERATOR, "acme", id, '"x"'))?.png);

  // Another tenant never reaches it: not as its administrator, not under its name.
  const globex: Administrator = { tenantId: "globex" };
  assert.equal(await photoPreview(s.kv, globex, "acme", id), null);
  assert.equal(await photoPreview(s.kv, globex, "globex", id), null);
  assert.equal(await photoPreview(s.kv, OPERATOR, "globex", id), null);
  assert.equal(cache.builds, 1);

  // Removed: forgotten, and not found.
  assert.ok(await removePhotoAvatar(s.kv, OPERATOR, "acme", id));
  assert.deepEqual([cache.size, cache.bytes], [0, 0]);
  assert.equal(await photoPreview(s.kv, OPERATOR, "acme", id), null);
  assert.equal(
    await photoPreview(s.kv, OPERATOR, "acme", id, first.etag),
    null,
  );
  assert.equal(cache.builds, 1);
});

Deno.test("PreviewCache keeps at most maxBytes, least recently used out first; a build the avatar's removal overtook is not kept", async () => {
  const cache = new PreviewCache(250);
  const png = (n: number) => () => Promise.resolve(new Uint8Array(n));
  await cache.get("t", "a", '"1"', png(100));
  await cache.get("t", "b", '"1"', png(100));
  await cache.get("t", "a", '"1"', png(100)); // a is now the most recent
  assert.deepEqual([cache.builds, cache.size, cache.bytes], [2, 2, 200]);
  await cache.get("t", "c", '"1"', png(100)); // b goes
  assert.deepEqual([cache.size, cache.bytes], [2, 200]);
  await cache.get("t", "a", '"1"', png(100));
  assert.equal(cache.builds, 3);
  await cache.get("t", "b", '"1"', png(100));
  assert.equal(cache.builds, 4);
  // Another ETag (the avatar changed) builds again and replaces the entry.
  await cache.get("t", "b", '"2"', png(50));
  assert.deepEqual([cache.builds, cache.size, cache.bytes], [5, 2, 150]);
  // Larger than the whole cache: served, not kept.
  assert.equal((await cache.get("t", "d", '"1"', png(300)))?.length, 300);
  assert.deepEqual([cache.size, cache.bytes], [2, 150]);
  // Forgotten while it was built: served to that request, not kept.
  let finish!: (b: Uint8Array) => void;
  const slow = cache.get(
    "t",
    "e",
    '"1"',
    () => new Promise<Uint8Array>((r) => finish = r),
  );
  cache.forget("t", "e");
  finish(new Uint8Array(10));
  assert.equal((await slow)?.length, 10);
  assert.deepEqual([cache.size, cache.bytes], [2, 150]);
  // Same avatar id under another tenant is another entry.
  await cache.get("u", "b", '"2"', png(50));
  assert.equal(cache.builds, 8);
});
