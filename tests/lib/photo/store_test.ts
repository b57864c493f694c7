import assert from "node:assert/strict";
import { ApiError } from "../../../lib/errors.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import {
  addPhotoAvatar,
  getPhotoManifest,
  listPhotoAvatars,
  removePhotoAvatar,
} from "../../../lib/photo/mod.ts";
import {
  photoChunkKey,
  photoCountKey,
  readPhotoAvatar,
} from "../../../lib/photo/store.ts";
import { add, fixtureBytes, HOPPER, refusal, setup } from "./_helpers.ts";

const ACME = { tenantId: "acme" };

async function allKeys(kv: Deno.Kv): Promise<string[]> {
  const out: string[] = [];
  for await (const e of kv.list({ prefix: [] })) {
    out.push(JSON.stringify(e.key));
  }
  return out;
}

Deno.test("addPhotoAvatar() stores manifest and chunks under the tenant, each chunk below 64 KiB", async () => {
  await using s = await setup();
  const avatar = await add(s.deps, { name: "  Grace Hopper " });
  assert.match(avatar.avatarId, /^ph_[0-9A-Z]{26}$/);
  const manifest = await getPhotoManifest(s.kv, "acme", avatar.avatarId);
  assert.ok(manifest);
  assert.equal(manifest.name, "Grace Hopper");
  assert.deepEqual(manifest.consent, { by: "cli", at: avatar.createdAt });
  assert.ok(manifest.chunks >= 2, `${manifest.chunks} chunks`);
  let total = 0;
  for (let i = 0; i < manifest.chunks; i++) {
    const c = await s.kv.get<Uint8Array>(
      photoChunkKey("acme", avatar.avatarId, i),
    );
    assert.ok(c.value && c.value.length < 64 * 1024);
    total += c.value.length;
  }
  assert.equal(total, manifest.bytes);
  assert.equal((await s.kv.get(photoCountKey("acme"))).value, 1);
  const back = await readPhotoAvatar(s.kv, "acme", avatar.avatarId);
  assert.ok(back);
  assert.deepEqual(back, avatar);
  // Another tenant reads nothing by the same id.
  assert.equal(await readPhotoAvatar(s.kv, "globex", avatar.avatarId), null);
  assert.deepEqual(await listPhotoAvatars(s.kv, OPERATOR, "acme"), [
    {
      avatar_id: avatar.avatarId,
      name: "Grace Hopper",
      created_at: avatar.createdAt,
      framing: "square",
      width: 512,
      height: 512,
    },
  ]);
  assert.equal(manifest.framing, "square");
});

Deno.test("addPhotoAvatar() prepares and stores the framing asked for, in one commit under 800 KiB", async () => {
  await using s = await setup();
  const avatar = await add(s.deps, { framing: "portrait" });
  assert.deepEqual([avatar.width, avatar.height], [720, 1280]);
  const manifest = await getPhotoManifest(s.kv, "acme", avatar.avatarId);
  assert.ok(manifest);
  assert.deepEqual(
    [manifest.framing, manifest.width, manifest.height, manifest.filter],
    ["portrait", 720, 1280, "up"],
  );
  // (KV refuses a commit of more than 800 KiB: the chunks and the manifest.)
  assert.ok(manifest.bytes < 760 * 1024, `${manifest.bytes} bytes`);
  assert.deepEqual(
    await readPhotoAvatar(s.kv, "acme", avatar.avatarId),
    avatar,
  );
  assert.deepEqual(
    (await listPhotoAvatars(s.kv, OPERATOR, "acme")).map((e) => e.framing),
    ["portrait"],
  );
});

Deno.test("addPhotoAvatar() stores nothing without consent, with a bad name or a refused photo", async (t) => {
  await using s = await setup();
  const cases: [
    string,
    Partial<Parameters<typeof addPhotoAvatar>[2]>,
    string,
  ][] = [
    ["no consent", { consentBy: null }, "consent not given"],
    [
      "an empty name",
      { name: "  " },
      "name must be 1 to 80 printable characters",
    ],
    [
      "a name with a newline",
      { name: "a\nb" },
      "name must be 1 to 80 printable characters",
    ],
    ["a bad tenant id", { tenantId: "a/b" }, "tenant id is not valid"],
    [
      "a photo refused (face too small)",
      { bytes: fixtureBytes("astronaut.png") },
      "face too small",
    ],
    [
      "a framing that is none",
      { framing: "wide" },
      "framing must be square, landscape or portrait",
    ],
    [
      "a framing the photo has no room for",
      { framing: "landscape" },
      "not enough room around the face for landscape",
    ],
  ];
  for (const [name, over, cause] of cases) {
    await t.step(name, async () => {
      assert.equal((await refusal(add(s.deps, over))).message, cause);
      assert.deepEqual(await allKeys(s.kv), []);
    });
  }
});

Deno.test("addPhotoAvatar() keeps a tenant within AVATAR_STORE_MAX_PER_TENANT, also when adds race", async () => {
  // Two at once (a tenant's share of the preparation queue), both below the limit
  // when they start: the count checked in the commit refuses the second.
  await using s = await setup(1);
  const results = await Promise.allSettled([add(s.deps), add(s.deps)]);
  const refused = results.filter((r) => r.status === "rejected");
  assert.equal(refused.length, 1);
  assert.equal(
    (refused[0] as PromiseRejectedResult).reason.message,
    "photo avatar limit reached",
  );
  assert.equal((await listPhotoAvatars(s.kv, OPERATOR, "acme")).length, 1);
  assert.equal((await s.kv.get(photoCountKey("acme"))).value, 1);
  // Another tenant has its own count.
  await add(s.deps, { tenantId: "globex" });
});

Deno.test("removePhotoAvatar() deletes the manifest and every chunk; another tenant's administrator cannot", async () => {
  await using s = await setup();
  const kept = await add(s.deps, { name: "kept" });
  const gone = await add(s.deps, { name: "gone" });
  const before = await allKeys(s.kv);
  assert.equal(
    await removePhotoAvatar(
      s.kv,
      { tenantId: "globex" },
      "acme",
      gone.avatarId,
    ),
    false,
  );
  assert.equal(
    await removePhotoAvatar(s.kv, OPERATOR, "globex", gone.avatarId),
    false,
  );
  assert.deepEqual(await allKeys(s.kv), before);
  assert.equal(
    await removePhotoAvatar(s.kv, ACME, "acme", gone.avatarId),
    true,
  );
  assert.equal(
    await removePhotoAvatar(s.kv, ACME, "acme", gone.avatarId),
    false,
  );
  const left = await allKeys(s.kv);
  assert.ok(left.every((k) => !k.includes(gone.avatarId)), left.join(" "));
  assert.ok(left.some((k) => k.includes(kept.avatarId)));
  assert.equal((await s.kv.get(photoCountKey("acme"))).value, 1);
  assert.deepEqual(
    (await listPhotoAvatars(s.kv, ACME, "acme")).map((e) => e.name),
    ["kept"],
  );
});

Deno.test("a tenant administrator adds and lists its own tenant's photo avatars only", async () => {
  await using s = await setup();
  await add(s.deps);
  await assert.rejects(
    addPhotoAvatar(s.deps, { tenantId: "globex" }, {
      tenantId: "acme",
      name: "x",
      bytes: HOPPER,
      consentBy: "k",
    }),
    (e) => e instanceof ApiError && e.code === "AVTR_AUTH_FORBIDDEN",
  );
  assert.deepEqual(
    await listPhotoAvatars(s.kv, { tenantId: "globex" }, "acme"),
    [],
  );
  assert.equal((await listPhotoAvatars(s.kv, ACME, "acme")).length, 1);
});

Deno.test("readPhotoAvatar() refuses a chunk damaged in the store", async () => {
  await using s = await setup();
  const avatar = await add(s.deps);
  const key = photoChunkKey("acme", avatar.avatarId, 1);
  const chunk = (await s.kv.get<Uint8Array>(key)).value!.slice();
  chunk[100] ^= 0xff;
  await s.kv.set(key, chunk);
  await assert.rejects(
    readPhotoAvatar(s.kv, "acme", avatar.avatarId),
    /checksum/,
  );
});
