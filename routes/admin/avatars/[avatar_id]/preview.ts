/**
 * The prepared 512×512 portrait of a photo avatar as a PNG, for the console's pages. The
 * tenant is the operator's `?tenant=` or a tenant administrator's own: another tenant's
 * avatar is not found, as an unknown one is.
 */
import type { Ctx } from "../../../../lib/api/http.ts";
import { isOperator } from "../../../../lib/auth/principal.ts";
import { errorPage, requireAdmin } from "../../../../lib/console/render.tsx";
import { photoPreview } from "../../../../lib/photo/mod.ts";

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const admin = requireAdmin(ctx);
    const tenant = isOperator(admin)
      ? ctx.url.searchParams.get("tenant") ?? ""
      : admin.tenantId;
    const png = await photoPreview(
      ctx.deps.kv,
      admin,
      tenant,
      ctx.params.avatar_id,
    );
    if (!png) {
      return errorPage(
        ctx,
        404,
        "Avatar not found",
        "There is no such photo avatar.",
      );
    }
    // The console's headers add `cache-control: no-store`: a tenant's portrait is never cached.
    return new Response(png as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": "image/png" },
    });
  },
};
