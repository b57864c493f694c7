/**
 * Server-sent events for the live sessions table (same filters as the page). The
 * console session is re-checked before every poll: a signed-out or revoked operator's
 * stream ends with `event: signed_out`. A tenant administrator's stream carries its own
 * tenant's sessions only. Feeds are capped per API key and per tenant (lib/console/live.ts).
 */
import { feedHolderOf, sessionsStream } from "../../../lib/console/live.ts";
import { requireAdmin, requireSession } from "../../../lib/console/render.tsx";
import { loadConsoleSession } from "../../../lib/console/session.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import { parseSessionFilters } from "../../../lib/console/filters.ts";
import { isOperator } from "../../../lib/principal.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    const session = requireSession(ctx);
    const { query } = parseSessionFilters(ctx.url);
    delete query.cursor;
    const admin = requireAdmin(ctx);
    // A tenant administrator's feed is its own tenant's, whatever the URL asks.
    if (!isOperator(admin)) delete query.tenant_id;
    return sessionsStream(ctx.deps, admin, query, {
      stillAllowed: async () =>
        (await loadConsoleSession(ctx.deps, session.id)) !== null,
      holder: feedHolderOf(session.record),
    });
  },
};
