/**
 * Creates naming a photo avatar (DECISIONS 12): it must be stored under the caller's
 * tenant; another tenant's, a removed or an unknown one is the same 400 as an unknown
 * catalog id. Without `bg_id` the photo keeps its own background. A session takes its
 * framing's render slots.
 */
import assert from "node:assert/strict";
import { OPERATOR } from "../../../../lib/principal.ts";
import { PHOTO_OWN_BG } from "../../../../lib/avatars.ts";
import {
  addPhotoAvatar,
  removePhotoAvatar,
} from "../../../../lib/photo/mod.ts";
import { readSession } from "../../../../lib/sessions.ts";
import { ApiError } from "../../../../lib/errors.ts";
import type { AppDeps } from "../../../../lib/deps.ts";
import { mediaHubOf } from "../../../../lib/media/service.ts";
import { TestClock } from "../../../_helpers.ts";
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

/** Grace Hopper as acme's 720×1280 `portrait` avatar. */
function addPortrait(deps: AppDeps) {
  return addPhotoAvatar(deps, OPERATOR, {
    tenantId: "acme",
    name: "Grace",
    bytes: HOPPER,
    consentBy: "test",
    framing: "portrait",
  });
}

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

Deno.test("a photo session takes its framing's render slots: four for 720×1280, at create and again when its lapsed lease's socket opens", async () => {
  const clock = new TestClock();
  const t = await sessionApp({ RENDER_MAX_SESSIONS: "5" }, { clock });
  try {
    const deps = t.app.deps;
    const portrait = await addPortrait(deps);
    const acme = await tenantKey(deps, "acme");
    const id = await createOk(
      t,
      withAvatar({ avatar_id: portrait.avatarId }),
      acme,
    );
    assert.equal(deps.renderSlots.inUse, 4);
    const rec = (await readSession(deps, id))!;
    assert.equal(rec.render_slots, 4);
    await createOk(t, validBody(), await tenantKey(deps, "t2"));
    await assertError(
      await postCreate(t, validBody(), { key: await tenantKey(deps, "t3") }),
      "AVTR_RENDER_CAPACITY",
    );
    // The portrait's lease lapses; two square sessions take slots meanwhile.
    clock.advance(30_000);
    assert.equal(deps.renderSlots.inUse, 0);
    await createOk(t, validBody(), await tenantKey(deps, "t4"));
    const sq = await createOk(t, validBody(), await tenantKey(deps, "t5"));
    const hub = mediaHubOf(deps);
    assert.throws(
      () => hub.admitSocket(rec),
      (e) => e instanceof ApiError && e.code === "AVTR_RENDER_CAPACITY",
      "three free slots do not paint a portrait",
    );
    deps.renderSlots.release(sq);
    hub.admitSocket(rec);
    assert.equal(deps.renderSlots.inUse, 5);
  } finally {
    await t.close();
  }
});

Deno.test("a framing that costs more render slots than the instance has is refused with its cause", async () => {
  const t = await sessionApp({ RENDER_MAX_SESSIONS: "3" });
  try {
    const deps = t.app.deps;
    const portrait = await addPortrait(deps);
    const body = await assertError(
      await postCreate(t, withAvatar({ avatar_id: portrait.avatarId }), {
        key: await tenantKey(deps, "acme"),
      }),
      "AVTR_RENDER_CAPACITY",
    );
    assert.match(body.message, /takes 4 render slots and this instance has 3/);
    assert.equal(deps.renderSlots.inUse, 0);
    assert.equal(deps.vault.size, 0);
  } finally {
    await t.close();
  }
});
