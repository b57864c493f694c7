/**
 * The console's upload form offers the framings (DECISIONS 12): the portrait is prepared
 * in the one chosen, listed with it, and previewed at its size; a photo without room
 * for it is refused with the cause, the choice kept.
 */
import assert from "node:assert/strict";
import { decode as decodePng } from "fast-png";
import { testApp } from "../../_helpers.ts";
import { get, signIn } from "./_console.ts";
import { HOPPER, stored, upload } from "./_avatars.ts";

/** The options of the form's framing select, and the one selected. */
function framings(html: string): { values: string[]; selected: string[] } {
  const select = html.match(
    /<select[^>]*name="framing"[^>]*>([\s\S]*?)<\/select>/,
  );
  assert.ok(select, "a framing select");
  const options = [...select[1].matchAll(/<option([^>]*)>/g)].map((m) => m[1]);
  return {
    values: options.map((o) => o.match(/value="([^"]+)"/)![1]),
    selected: options.filter((o) => /\bselected\b/.test(o)).map((o) =>
      o.match(/value="([^"]+)"/)![1]
    ),
  };
}

Deno.test("the console prepares a portrait in the framing chosen, and refuses one without room for it", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    await t.step(
      "the form offers square (chosen), landscape and portrait",
      async () => {
        const html = await (await get(app, c, "/admin/avatars?tenant=acme"))
          .text();
        assert.deepEqual(framings(html), {
          values: ["square", "landscape", "portrait"],
          selected: ["square"],
        });
      },
    );
    await t.step(
      "landscape from a portrait photo: 400, the cause, the choice kept",
      async () => {
        const res = await upload(app, c, {
          tenant_id: "acme",
          name: "Grace",
          consent: "yes",
          framing: "landscape",
        }, HOPPER);
        const html = await res.text();
        assert.equal(res.status, 400);
        assert.match(html, /not enough room around the face for landscape/);
        assert.deepEqual(framings(html).selected, ["landscape"]);
        assert.deepEqual(await stored(app, "acme"), []);
      },
    );
    await t.step(
      "portrait: listed with it, previewed at 720×1280",
      async () => {
        const res = await upload(app, c, {
          tenant_id: "acme",
          name: "Grace",
          consent: "yes",
          framing: "portrait",
        }, HOPPER);
        const html = await res.text();
        assert.equal(res.status, 201, html);
        const [id] = await stored(app, "acme");
        const row = html.match(
          new RegExp(`<tr[^>]*data-avatar-id="${id}"[^>]*>([\\s\\S]*?)</tr>`),
        );
        assert.ok(row, "a row for it");
        assert.match(row[1], /portrait 720 × 1280/);
        // Its thumbnail in its proportions.
        assert.match(row[1], /<img[^>]*width="54"[^>]*height="96"/);
        const png = decodePng(
          new Uint8Array(
            await (await get(
              app,
              c,
              `/admin/avatars/${id}/preview?tenant=acme`,
            ))
              .arrayBuffer(),
          ),
        );
        assert.deepEqual([png.width, png.height], [720, 1280]);
      },
    );
  } finally {
    await app.close();
  }
});
