/**
 * Creates naming a photo avatar (DECISIONS 12): it must be stored under the caller's
 * tenant; another tenant's, a removed or an unknown one is the same 400 as an unknown
 * catalog id. Without `bg_id` the photo keeps its own background.
 */
import assert from "node:assert/strict";
import { OPERATOR } from "../../../../lib/principal.ts";
import { PHOTO_OWN_BG } from "../../../../lib/avatars.ts";
import {
  addPhotoAvatar,
  removePhotoAvatar,
} from "../../../../lib/photo/mod.ts";
import { readSession } from "../../../../lib/sessions.ts";
import {
  assertError,
  createOk,
  postCreate,
  sessionApp,
  tenantKey,
  validBody,
} from "./_helpers.ts";

const HOPPER = Deno.readFileSync(
  new URL("../../../fixtures/photo/grace_hopper.jpg", import.meta.url),
);

function withAvatar(avatar_config: Record<string, string>) {
  return { ...validBody(), avatar_config };
}

Deno.test("create with a photo avatar of the caller's tenant; another tenant's reads as unknown", async () => {
  const t = await sessionApp();
  try {
    const deps = t.app.deps;
    const photo = await addPhotoAvatar(deps, OPERATOR, {
      tenantId: "acme",
      name: "Grace",
      bytes: HOPPER,
      consentBy: "test",
    });
    const acme = await tenantKey(deps, "acme");
    const globex = await tenantKey(deps, "globex");

    const own = await createOk(
      t,
      withAvatar({ avatar_id: photo.avatarId }),
      acme,
    );
    const rec = await readSession(deps, own);
    assert.equal(rec?.avatar_id, photo.avatarId);
    assert.equal(rec?.bg_id, PHOTO_OWN_BG);

    const onStudio = await createOk(
      t,
      withAvatar({ avatar_id: photo.avatarId, bg_id: "studio" }),
      acme,
    );
    assert.equal((await readSession(deps, onStudio))?.bg_id, "studio");

    const unknown = await assertError(
      await postCreate(
        t,
        withAvatar({ avatar_id: "ph_01JZZZZZZZZZZZZZZZZZZZZZZZ" }),
        { key: acme },
      ),
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.avatar_id",
    );
    const foreign = await assertError(
      await postCreate(t, withAvatar({ avatar_id: photo.avatarId }), {
        key: globex,
      }),
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.avatar_id",
    );
    const catalog = await assertError(
      await postCreate(t, withAvatar({ avatar_id: "nobody" }), { key: globex }),
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.avatar_id",
    );
    // Indistinguishable: same message for another tenant's id, a missing one, a catalog miss.
    assert.equal(foreign.message, unknown.message);
    assert.equal(foreign.message, catalog.message);

    // The photo's own background is not a background a request may name.
    await assertError(
      await postCreate(
        t,
        withAvatar({ avatar_id: photo.avatarId, bg_id: PHOTO_OWN_BG }),
        { key: acme },
      ),
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.bg_id",
    );

    // Removed: new creates are refused; the session made before keeps its record.
    assert.ok(
      await removePhotoAvatar(deps.kv, OPERATOR, "acme", photo.avatarId),
    );
    await assertError(
      await postCreate(t, withAvatar({ avatar_id: photo.avatarId }), {
        key: acme,
      }),
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.avatar_id",
    );
    assert.equal((await readSession(deps, own))?.avatar_id, photo.avatarId);
  } finally {
    await t.close();
  }
});
