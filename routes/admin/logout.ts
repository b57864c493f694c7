/** Sign out: deletes the console session from KV and clears its cookie. */
import { clearSessionCookie, redirect } from "../../lib/console/http.ts";
import { requireSession } from "../../lib/console/render.tsx";
import { deleteConsoleSession } from "../../lib/console/session.ts";
import type { Ctx } from "../../lib/api/http.ts";

export const handler = {
  async POST(ctx: Ctx): Promise<Response> {
    const session = requireSession(ctx);
    await deleteConsoleSession(ctx.deps, session.id);
    return redirect("/admin/login?signed_out=1", {
      "set-cookie": clearSessionCookie(ctx),
    });
  },
};
