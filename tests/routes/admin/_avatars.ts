/**
 * Helpers of the console's photo avatars tests: the fixture portraits, posting the
 * upload form as a browser does, and the avatar ids a tenant has stored.
 */
import type { testApp } from "../../_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { listPhotoAvatars } from "../../../lib/photo/mod.ts";
import { type Console, ORIGIN } from "./_console.ts";

type App = Awaited<ReturnType<typeof testApp>>;

const PHOTOS = new URL("../../fixtures/photo/", import.meta.url);
export const HOPPER = Deno.readFileSync(new URL("grace_hopper.jpg", PHOTOS));
export const ASTRONAUT = Deno.readFileSync(new URL("astronaut.png", PHOTOS));

/** Posts the upload form as a browser does (multipart), with the session's CSRF token. */
export function upload(
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

/** The ids of the photo avatars `tenant` has stored. */
export async function stored(app: App, tenant: string): Promise<string[]> {
  return (await listPhotoAvatars(app.app.deps.kv, OPERATOR, tenant)).map((a) =>
    a.avatar_id
  );
}
