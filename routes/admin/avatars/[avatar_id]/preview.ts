/**
 * The prepared portrait of a photo avatar (in its framing) as a PNG, for the console's
 * pages. The tenant is the operator's `?tenant=` or a tenant administrator's own:
 * another tenant's avatar is not found, as an unknown one is. Built once per process
 * (lib/photo/preview.ts), served with its ETag: a browser's current copy is answered 304 without a body.
 */
import type { Ctx } from "../../../../lib/api/http.ts";
import { isOperator } from "../../../../lib/principal.ts";
import { errorPage, requireAdmin } from "../../../../lib/console/render.tsx";
import { photoPreview } from "../../../../lib/photo/mod.ts";

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const admin = requireAdmin(ctx);
    const tenant = isOperator(admin)
      ? ctx.url.searchParams.get("tenant") ?? ""
      : admin.tenantId;
    const preview = await photoPreview(
      ctx.deps.kv,
      admin,
      tenant,
      ctx.params.avatar_id,
      ctx.req.headers.get("if-none-match"),
    );
    if (!preview) {
      return errorPage(
        ctx,
        404,
        "Avatar not found",
        "There is no such photo avatar.",
      );
    }
    // Kept by this browser only, and asked for again each time it is shown: a removed
    // avatar or a signed-out console shows nothing, a current copy costs a 304.
    const headers = {
      "cache-control": "private, no-cache",
      etag: preview.etag,
    };
    if (!preview.png) return new Response(null, { status: 304, headers });
    return new Response(preview.png as Uint8Array<ArrayBuffer>, {
      headers: { ...headers, "content-type": "image/png" },
    });
  },
};
