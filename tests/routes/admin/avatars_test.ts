/**
 * The console's photo avatars page (DECISIONS 12): upload (multipart, CSRF, the photo's
 * size limit counted while the body arrives), preview, list and remove; a tenant
 * administrator sees and changes its own tenant only, the operator picks any.
 */
import assert from "node:assert/strict";
import { decode as decodePng } from "fast-png";
import { testApp } from "../../_helpers.ts";
import { OPERATOR } from "../../../lib/auth/principal.ts";
import { addPhotoAvatar, listPhotoAvatars } from "../../../lib/photo/mod.ts";
import { MAX_UPLOAD_PARTS } from "../../../lib/console/http.ts";
import {
  type Console,
  get,
  mintViaApi,
  ORIGIN,
  post,
  signIn,
} from "./_console.ts";

type App = Awaited<ReturnType<typeof testApp>>;

const PHOTOS = new URL("../../fixtures/photo/", import.meta.url);
const HOPPER = Deno.readFileSync(new URL("grace_hopper.jpg", PHOTOS));
const ASTRONAUT = Deno.readFileSync(new URL("astronaut.png", PHOTOS));

/** Posts the upload form as a browser does (multipart), with the session's CSRF token. */
function upload(
  app: App,
  c: Console,
  fields: Record<string, string>,
  photo?: Uint8Array,
): Promise<Response> {
  const form = new FormData();
  form.set("_csrf", c.csrf);
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  if (photo) {
    form.set(
      "photo",
      new File([photo as Uint8Array<ArrayBuffer>], "portrait.jpg", {
        type: "image/jpeg",
      }),
    );
  }
  return app.request("/admin/avatars", {
    method: "POST",
    headers: { cookie: c.cookie, origin: ORIGIN },
    body: form,
    redirect: "manual",
  });
}

const rows = (html: string) =>
  [...html.matchAll(/data-avatar-id="([^"]+)"/g)].map((m) => m[1]);

async function stored(app: App, tenant: string): Promise<string[]> {
  return (await listPhotoAvatars(app.app.deps.kv, OPERATOR, tenant)).map((a) =>
    a.avatar_id
  );
}

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

Deno.test("the upload form refuses with the cause and stores nothing", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const cases: [
      string,
      Record<string, string>,
      Uint8Array | undefined,
      number,
      RegExp,
    ][] = [
      [
        "no consent",
        { tenant_id: "acme", name: "A" },
        HOPPER,
        400,
        /not added: consent not given/,
      ],
      [
        "a face too small",
        { tenant_id: "acme", name: "A", consent: "yes" },
        ASTRONAUT,
        400,
        /not added: face too small/,
      ],
      [
        "no file",
        { tenant_id: "acme", name: "A", consent: "yes" },
        undefined,
        400,
        /not added: not a JPEG or PNG/,
      ],
      [
        "a stale CSRF token",
        { tenant_id: "acme", name: "A", consent: "yes", _csrf: "x" },
        HOPPER,
        403,
        /security token/,
      ],
    ];
    for (const [name, fields, photo, status, text] of cases) {
      await t.step(name, async () => {
        const res = await upload(app, c, fields, photo);
        const html = await res.text();
        assert.equal(res.status, status, html);
        assert.match(html, text);
        assert.deepEqual(await stored(app, "acme"), []);
      });
    }
    await t.step(
      "a body past the photo's limit is cut off while it arrives (413)",
      async () => {
        const big = new Uint8Array(8 * 1024 * 1024 + 100 * 1024);
        big.set(HOPPER);
        const res = await upload(app, c, {
          tenant_id: "acme",
          name: "A",
          consent: "yes",
        }, big);
        assert.equal(res.status, 413);
        assert.match(await res.text(), /more than 8 MiB/);
        assert.deepEqual(await stored(app, "acme"), []);
      },
    );
    await t.step("other console forms keep their 64-KiB limit", async () => {
      const form = new FormData();
      form.set("_csrf", c.csrf);
      form.set("photo", new File([HOPPER], "p.jpg"));
      const res = await app.request("/admin/keys", {
        method: "POST",
        headers: { cookie: c.cookie, origin: ORIGIN },
        body: form,
      });
      assert.equal(res.status, 403); // read as an empty form: no CSRF token
      await res.body?.cancel();
    });
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

Deno.test("an upload form of more than MAX_UPLOAD_PARTS fields is refused before it is parsed", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const boundary = "manyPartsBoundary";
    const field = (name: string, value: string) =>
      `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const enc = new TextEncoder();
    const body = (extra: number) => {
      const head = field("_csrf", c.csrf) + field("tenant_id", "acme") +
        field("name", "Many") + field("consent", "yes") +
        field("x", "").repeat(extra) +
        `--${boundary}\r\ncontent-disposition: form-data; name="photo"; filename="p.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`;
      const tail = `\r\n--${boundary}--\r\n`;
      return new Uint8Array([
        ...enc.encode(head),
        ...HOPPER,
        ...enc.encode(tail),
      ]);
    };
    const send = (extra: number) =>
      app.request("/admin/avatars", {
        method: "POST",
        headers: {
          cookie: c.cookie,
          origin: ORIGIN,
          "content-type": `multipart/form-data; boundary="${boundary}"`,
        },
        body: body(extra),
      });
    const refused = await send(50_000);
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /more than 32 fields/);
    assert.deepEqual(await stored(app, "acme"), []);
    // Within the bound, the same form is read and the portrait added.
    const res = await send(MAX_UPLOAD_PARTS - 6);
    assert.equal(res.status, 201, await res.text());
    assert.equal((await stored(app, "acme")).length, 1);
  } finally {
    await app.close();
  }
});

Deno.test("an upload form whose boundary formData() would read otherwise (escaped quote, past 70 characters) is refused before its body is read", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    for (
      const [what, header, boundary, cause] of [
        [
          "an escaped quote",
          'multipart/form-data; boundary="a\\"b"',
          'a"b',
          /boundary has a character RFC 2046 does not allow/,
        ],
        [
          "71 characters",
          `multipart/form-data; boundary=${"b".repeat(71)}`,
          "b".repeat(71),
          /boundary is longer than 70 characters/,
        ],
      ] as const
    ) {
      await t.step(what, async () => {
        // The form formData() would read with that boundary: 150,000 parts.
        const field = (name: string, value: string) =>
          `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
        const body = new TextEncoder().encode(
          field("_csrf", c.csrf) + field("tenant_id", "acme") +
            field("name", "Many") + field("consent", "yes") +
            field("x", "").repeat(150_000) + `--${boundary}--\r\n`,
        );
        let pulled = 0;
        const stream = new ReadableStream<Uint8Array>({
          pull(ctl) {
            const at = pulled++ * 65536;
            if (at >= body.length) ctl.close();
            else ctl.enqueue(body.slice(at, at + 65536));
          },
        }, { highWaterMark: 0 });
        const res = await app.request("/admin/avatars", {
          method: "POST",
          headers: {
            cookie: c.cookie,
            origin: ORIGIN,
            "content-type": header,
          },
          body: stream,
        });
        assert.equal(res.status, 400);
        assert.match(await res.text(), cause);
        assert.equal(pulled, 0, "the body was never read, so never parsed");
        assert.deepEqual(await stored(app, "acme"), []);
      });
    }
  } finally {
    await app.close();
  }
});
