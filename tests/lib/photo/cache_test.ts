import assert from "node:assert/strict";
import { OPERATOR } from "../../../lib/principal.ts";
import { loadPhotoAvatar, removePhotoAvatar } from "../../../lib/photo/mod.ts";
import { add, setup } from "./_helpers.ts";

Deno.test("loadPhotoAvatar() reads each avatar once per instance and keeps it after a remove", async () => {
  await using s = await setup();
  const avatar = await add(s.deps);
  let gets = 0;
  const counting = new Proxy(s.kv, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === "get" || prop === "getMany") gets++;
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  const [a, b] = await Promise.all([
    loadPhotoAvatar(counting, "acme", avatar.avatarId),
    loadPhotoAvatar(counting, "acme", avatar.avatarId),
  ]);
  assert.ok(a && a === b);
  const readsForOne = gets;
  assert.ok(readsForOne >= 2); // manifest, then its chunks
  assert.equal(await loadPhotoAvatar(counting, "acme", avatar.avatarId), a);
  assert.equal(gets, readsForOne);
  await removePhotoAvatar(s.kv, OPERATOR, "acme", avatar.avatarId);
  assert.equal(await loadPhotoAvatar(counting, "acme", avatar.avatarId), a);
  // Unknown ids and other tenants' ids are null, and a miss is not remembered.
  assert.equal(
    await loadPhotoAvatar(counting, "globex", avatar.avatarId),
    null,
  );
  const later = await add(s.deps, { tenantId: "globex" });
  assert.equal(
    await loadPhotoAvatar(counting, "globex", later.avatarId).then((x) =>
      x?.tenantId
    ),
    "globex",
  );
});
