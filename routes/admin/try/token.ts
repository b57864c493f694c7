/**
 * `POST /admin/try/token`: a fresh media token for a session this console session
 * started on the Try it page, as JSON `{client_token, expires_at}` — what the TryIt
 * island hands to `AvatarPlayer` for its first connect and every refresh. The console
 * middleware has already checked the Origin and the CSRF token. Any other session
 * (another tenant's, another operator's, or one started elsewhere) answers 404; a
 * session that is over answers 409. The token only ever travels in this body, never in
 * HTML or a URL other than the media socket's own.
 */
import { consoleState, requireSession } from "../../../lib/console/render.tsx";
import { trySessionTenant } from "../../../lib/console/try_it.ts";
import { type Ctx, json } from "../../../lib/api/http.ts";
import { isSessionId, isTerminal, readSession } from "../../../lib/sessions.ts";
import { mintToken } from "../../../lib/auth/tokens.ts";

const NO_STORE = { "cache-control": "no-store" };

function refuse(status: number, code: string, message: string): Response {
  return json({ code, message }, status, NO_STORE);
}

export const handler = {
  async POST(ctx: Ctx): Promise<Response> {
    const id = consoleState(ctx).form.get("session_id") ?? "";
    const tenant = isSessionId(id)
      ? await trySessionTenant(ctx.deps, requireSession(ctx).id, id)
      : null;
    const rec = tenant === null ? null : await readSession(ctx.deps, id);
    if (!rec || rec.tenant_id !== tenant) {
      return refuse(
        404,
        "AVTR_SESSION_NOT_FOUND",
        "No session started from this console session has this id",
      );
    }
    if (isTerminal(rec.status)) {
      return refuse(409, "AVTR_SESSION_ENDED", "Session has already ended");
    }
    const t = mintToken(ctx.deps, rec.session_id, "client");
    return json(
      { client_token: t.token, expires_at: t.expiresAt },
      200,
      NO_STORE,
    );
  },
};
