/**
 * The upload fuzzer's multipart shapes (issue 29) against the real app in-process: every
 * shape is refused by the console's form reader itself (400 "Form unreadable" or 413
 * "Form too large"), never by a later step, never with a 5xx, nothing stored.
 */
import assert from "node:assert/strict";
import { Rng } from "../../fuzz/_lib.ts";
import { multipartShape } from "../../fuzz/upload_cases.ts";
import { testApp } from "../_helpers.ts";
import { OPERATOR } from "../../lib/principal.ts";
import { listPhotoAvatars } from "../../lib/photo/mod.ts";
import { ORIGIN, signIn } from "../routes/admin/_console.ts";

Deno.test("multipartShape(): each hostile multipart form is refused by the form reader, none reaches the upload", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const target = { ...c, origin: ORIGIN, tenant: "acme" };
    const rng = new Rng(29);
    const seen = new Map<string, number[]>();
    for (let i = 0; i < 80; i++) {
      const shape = multipartShape(rng, target);
      const res = await app.request("/admin/avatars", {
        method: "POST",
        headers: {
          cookie: c.cookie,
          origin: ORIGIN,
          "content-type": shape.contentType,
        },
        body: shape.body as Uint8Array<ArrayBuffer>,
      });
      const html = await res.text();
      assert.ok(
        (res.status === 400 && html.includes("Form unreadable")) ||
          (res.status === 413 && html.includes("Form too large")),
        `${shape.what}: ${res.status}`,
      );
      seen.set(shape.what, [...seen.get(shape.what) ?? [], res.status]);
    }
    // Every shape was sent.
    assert.equal(seen.size, 11, JSON.stringify([...seen.keys()]));
    assert.deepEqual(
      await listPhotoAvatars(app.app.deps.kv, OPERATOR, "acme"),
      [],
    );
  } finally {
    await app.close();
  }
});
