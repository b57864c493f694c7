/**
 * The console's photo avatar upload form refuses with the cause and stores nothing:
 * no consent, a face too small, no file, a stale CSRF token, a body past the photo's
 * size limit (counted while it arrives), more than MAX_UPLOAD_PARTS fields, or a
 * boundary formData() would read otherwise; other console forms keep their limit.
 */
import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import { MAX_UPLOAD_PARTS } from "../../../lib/console/http.ts";
import { ORIGIN, signIn } from "./_console.ts";
import { ASTRONAUT, HOPPER, stored, upload } from "./_avatars.ts";

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
