/**
 * Server-sent events for the live sessions table (same filters as the page). The
 * console session is re-checked before every poll: a signed-out or revoked operator's
 * stream ends with `event: signed_out`.
 */
import { sessionsStream } from "../../../lib/console/live.ts";
import { requireSession } from "../../../lib/console/render.tsx";
import { loadConsoleSession } from "../../../lib/console/session.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import { parseSessionFilters } from "../../../lib/console/filters.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    const session = requireSession(ctx);
    const { query } = parseSessionFilters(ctx.url);
    delete query.cursor;
    return sessionsStream(ctx.deps, query, {
      stillAllowed: async () =>
        (await loadConsoleSession(ctx.deps, session.id)) !== null,
    });
  },
};
