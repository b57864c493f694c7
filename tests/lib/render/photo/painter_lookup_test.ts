/**
 * Finding a photo avatar's painter: rigOf() keeps one rig per avatar (not per id
 * alone), and photoPainters() opens a painter only for a known photo avatar of the
 * session's tenant, on a background it names.
 */
import assert from "node:assert/strict";
import { photoPainters } from "../../../../lib/render/photo/mod.ts";
import { rigOf } from "../../../../lib/render/photo/painter.ts";
import { RenderStartError } from "../../../../lib/ports/render.ts";
import { isThreadPainter } from "../../../../lib/render/painter.ts";
import { AVATAR_ID, smileAvatar, testAvatar } from "./_avatar.ts";

const avatar = await testAvatar();

Deno.test("rigOf() builds a rig once per avatar, not per id alone", async () => {
  const smile = await smileAvatar();
  assert.equal(rigOf(avatar), rigOf(avatar));
  const twin = { ...smile, avatarId: avatar.avatarId, tenantId: "other" };
  assert.notEqual(
    rigOf(twin),
    rigOf(avatar),
    "another tenant's avatar, same id",
  );
  assert.notEqual(rigOf(twin).photoTeeth, null);
  // Two pictures given one id, tenant and time (an evaluation run gave every portrait
  // the same): each its own rig, not the first one's mesh on the second's pixels.
  const same = {
    ...smile,
    avatarId: avatar.avatarId,
    tenantId: avatar.tenantId,
    createdAt: avatar.createdAt,
  };
  assert.notEqual(rigOf(same), rigOf(avatar), "another picture, same key");
  assert.notEqual(rigOf(same).photoTeeth, null);
});

Deno.test("photoPainters()", async (t) => {
  const loads: string[] = [];
  const source = photoPainters((tenant, id) => {
    loads.push(`${tenant}/${id}`);
    return Promise.resolve(
      tenant === "acme" && id === AVATAR_ID ? avatar : null,
    );
  });
  await t.step("ids that are not photo avatars are not its own", async () => {
    assert.equal(
      await source({
        sessionId: "s",
        tenantId: "acme",
        avatarId: "ava",
        bgId: "studio",
      }),
      undefined,
    );
    assert.deepEqual(loads, []);
  });
  await t.step(
    "an unknown or another tenant's photo avatar is misconfigured",
    async () => {
      for (
        const o of [
          { tenantId: "acme", avatarId: "ph_ZZZZZZZZZZZZZZZZZZZZZZZZZZ" },
          { tenantId: "other", avatarId: AVATAR_ID },
          { avatarId: AVATAR_ID },
        ]
      ) {
        await assert.rejects(
          source({ sessionId: "s", bgId: "studio", ...o }),
          (e) => e instanceof RenderStartError && e.kind === "misconfigured",
        );
      }
    },
  );
  await t.step(
    "a known one opens a 512×512 painter on the named background",
    async () => {
      const p = await source({
        sessionId: "s",
        tenantId: "acme",
        avatarId: AVATAR_ID,
        bgId: "transparent",
      });
      assert.ok(p && !isThreadPainter(p), "painted in-process without a pool");
      assert.ok(p.width === 512 && p.height === 512 && p.paintAlpha);
      for (const own of ["", "photo"]) {
        const q = await source({
          sessionId: "s",
          tenantId: "acme",
          avatarId: AVATAR_ID,
          bgId: own,
        });
        assert.ok(q && !isThreadPainter(q) && !q.paintAlpha, `bgId "${own}"`);
      }
      await assert.rejects(
        source({
          sessionId: "s",
          tenantId: "acme",
          avatarId: AVATAR_ID,
          bgId: "moon",
        }),
        (e) => e instanceof RenderStartError && e.kind === "misconfigured",
      );
    },
  );
});
