/**
 * The console's photo avatars page (DECISIONS 12): the operator uploads a portrait
 * for any tenant, previews, lists and removes it; a tenant administrator sees and
 * changes its own tenant only. The upload form's refusals are in
 * avatars_upload_refusals_test.ts.
 */
import assert from "node:assert/strict";
import { decode as decodePng } from "fast-png";
import { testApp } from "../../_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { addPhotoAvatar } from "../../../lib/photo/mod.ts";
import { get, mintViaApi, post, signIn } from "./_console.ts";
import { HOPPER, stored, upload } from "./_avatars.ts";

const rows = (html: string) =>
  [...html.matchAll(/data-avatar-id="([^"]+)"/g)].map((m) => m[1]);

Deno.test("the operator uploads a portrait for a tenant, sees its preview, lists and removes it", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    await t.step(
      "the nav links the page; without a tenant it asks for one",
      async () => {
        const res = await get(app, c, "/admin/avatars");
        assert.equal(res.status, 200);
        const html = await res.text();
        assert.match(html, /href="\/admin\/avatars"[^>]*aria-current="page"/);
        assert.match(html, /id="avatars-tenant"/);
        assert.equal(html.includes('enctype="multipart/form-data"'), false);
      },
    );
    let id = "";
    await t.step(
      "upload: 201 with the prepared portrait's preview",
      async () => {
        const res = await upload(app, c, {
          tenant_id: "acme",
          name: "Grace",
          consent: "yes",
        }, HOPPER);
        const html = await res.text();
        assert.equal(res.status, 201, html);
        [id] = await stored(app, "acme");
        assert.match(id, /^ph_[0-9A-Z]{26}$/);
        assert.ok(
          html.includes(`src="/admin/avatars/${id}/preview?tenant=acme"`),
        );
        assert.deepEqual(rows(html), [id]);
      },
    );
    let etag = "";
    await t.step("the preview is the 512×512 crop as a PNG", async () => {
      const res = await get(app, c, `/admin/avatars/${id}/preview?tenant=acme`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/png");
      // Kept by this browser only, revalidated each time it is shown.
      assert.equal(res.headers.get("cache-control"), "private, no-cache");
      etag = res.headers.get("etag") ?? "";
      assert.match(etag, /^"[0-9a-f]{64}"$/);
      const png = decodePng(new Uint8Array(await res.arrayBuffer()));
      assert.deepEqual([png.width, png.height, png.channels], [512, 512, 3]);
      // The browser's copy is current: 304, no body, the same validator.
      const again = await app.request(
        `/admin/avatars/${id}/preview?tenant=acme`,
        { headers: { cookie: c.cookie, "if-none-match": etag } },
      );
      assert.equal(again.status, 304);
      assert.equal(again.headers.get("etag"), etag);
      assert.equal(again.headers.get("cache-control"), "private, no-cache");
      assert.equal(await again.text(), "");
      // Other console pages keep no-store.
      assert.equal(
        (await get(app, c, "/admin/avatars?tenant=acme")).headers.get(
          "cache-control",
        ),
        "no-store",
      );
      // Under another tenant the same id is not found.
      assert.equal(
        (await get(app, c, `/admin/avatars/${id}/preview?tenant=globex`))
          .status,
        404,
      );
    });
    await t.step(
      "the Try it page offers the tenant's photo avatars",
      async () => {
        await addPhotoAvatar(app.app.deps, OPERATOR, {
          tenantId: "demo",
          name: "Demo face",
          bytes: HOPPER,
          consentBy: "t",
        });
        const html = await (await get(app, c, "/admin/try")).text();
        assert.match(
          html,
          /<optgroup label="Photo avatars of demo"><option value="ph_[0-9A-Z]{26}"[^>]*>Demo face<\/option>/,
        );
      },
    );
    await t.step(
      "remove asks first without confirm, then deletes",
      async () => {
        const ask = await post(app, c, `/admin/avatars/${id}/remove`, {
          tenant_id: "acme",
        });
        assert.equal(ask.status, 200);
        assert.match(await ask.text(), /Remove this photo avatar\?/);
        assert.deepEqual(await stored(app, "acme"), [id]);
        const done = await post(app, c, `/admin/avatars/${id}/remove`, {
          tenant_id: "acme",
          confirm: "yes",
        });
        assert.equal(done.status, 303);
        assert.equal(
          done.headers.get("location"),
          `/admin/avatars?tenant=acme&removed=${id}`,
        );
        assert.deepEqual(await stored(app, "acme"), []);
        assert.equal(
          (await get(app, c, `/admin/avatars/${id}/preview?tenant=acme`))
            .status,
          404,
        );
        // A browser's copy of the removed avatar is not confirmed either.
        const stale = await app.request(
          `/admin/avatars/${id}/preview?tenant=acme`,
          { headers: { cookie: c.cookie, "if-none-match": etag } },
        );
        await stale.body?.cancel();
        assert.equal(stale.status, 404);
      },
    );
  } finally {
    await app.close();
  }
});

Deno.test("a tenant administrator sees and changes its own tenant's photo avatars only", async (t) => {
  const app = await testApp();
  try {
    const deps = app.app.deps;
    const acmeAdmin = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["keys:admin"],
    });
    const theirs = await addPhotoAvatar(deps, OPERATOR, {
      tenantId: "globex",
      name: "Theirs",
      bytes: HOPPER,
      consentBy: "t",
    });
    const c = await signIn(app, acmeAdmin.api_key);
    await t.step(
      "the page is acme's whatever the query; no tenant picker",
      async () => {
        for (const path of ["/admin/avatars", "/admin/avatars?tenant=globex"]) {
          const html = await (await get(app, c, path)).text();
          assert.equal(html.includes('id="avatars-tenant"'), false);
          assert.match(html, /No photo avatars for tenant acme/);
          assert.equal(html.includes(theirs.avatarId), false);
        }
      },
    );
    await t.step(
      "uploading for another tenant is refused (403); for its own it works",
      async () => {
        const refused = await upload(app, c, {
          tenant_id: "globex",
          name: "X",
          consent: "yes",
        }, HOPPER);
        assert.equal(refused.status, 403);
        assert.match(await refused.text(), /administer your own tenant only/);
        assert.deepEqual(await stored(app, "globex"), [theirs.avatarId]);
        const own = await upload(app, c, {
          tenant_id: "acme",
          name: "Ours",
          consent: "yes",
        }, HOPPER);
        assert.equal(own.status, 201);
        await own.body?.cancel();
        assert.equal((await stored(app, "acme")).length, 1);
      },
    );
    await t.step(
      "another tenant's avatar: preview and remove are not found",
      async () => {
        const preview = await get(
          app,
          c,
          `/admin/avatars/${theirs.avatarId}/preview?tenant=globex`,
        );
        assert.equal(preview.status, 404);
        await preview.body?.cancel();
        const remove = await post(
          app,
          c,
          `/admin/avatars/${theirs.avatarId}/remove`,
          { tenant_id: "globex", confirm: "yes" },
        );
        assert.equal(remove.status, 404);
        await remove.body?.cancel();
        assert.deepEqual(await stored(app, "globex"), [theirs.avatarId]);
      },
    );
  } finally {
    await app.close();
  }
});
