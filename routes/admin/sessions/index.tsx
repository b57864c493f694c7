/**
 * Live sessions: the newest sessions (filter by tenant and status) with a counter of
 * live ones. The first page is an island that follows /admin/sessions/events; older
 * pages are plain server-rendered tables.
 */
import { Notice, PageHeader } from "../../../components/ui.tsx";
import LiveSessions from "../../../islands/LiveSessions.tsx";
import { ALL_STATUSES } from "../../../lib/console/format.ts";
import {
  parseSessionFilters,
  type SessionFilters as Filters,
} from "../../../lib/console/filters.ts";
import { Island } from "../../../lib/console/island.tsx";
import {
  type SessionsSnapshot,
  sessionsSnapshot,
} from "../../../lib/console/live.ts";
import {
  page,
  type PageProps,
  requireAdmin,
} from "../../../lib/console/render.tsx";
import { isOperator } from "../../../lib/principal.ts";
import type { Ctx } from "../../../lib/api/http.ts";

function href(path: string, f: Partial<Filters>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

interface SessionsData {
  snap: SessionsSnapshot;
  filters: Filters;
  errors: string[];
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const { filters, query, errors } = parseSessionFilters(ctx.url);
    const admin = requireAdmin(ctx);
    if (!isOperator(admin)) {
      // A tenant administrator's table is its own tenant's, whatever the URL asks.
      filters.tenant = admin.tenantId;
      delete query.tenant_id;
    }
    const snap = await sessionsSnapshot(ctx.deps, admin, query);
    return page(ctx, SessionsPage, { snap, filters, errors }, {
      title: "Sessions",
      section: "sessions",
    });
  },
};

export default function SessionsPage(
  { data, admin }: PageProps<SessionsData>,
) {
  const { snap, filters } = data;
  const operator = admin !== null && isOperator(admin);
  const filtered = Boolean((operator && filters.tenant) || filters.status);
  const props = {
    rows: snap.rows,
    liveCount: snap.live_count,
    now: snap.now,
    streamUrl: href("/admin/sessions/events", {
      tenant: operator ? filters.tenant : "",
      status: filters.status,
    }),
    filtered,
  };
  return (
    <>
      <PageHeader
        title="Sessions"
        lead="Newest first. The first page updates live as sessions move."
      />
      <form method="get" action="/admin/sessions" class="filters" role="search">
        {operator && (
          <div class="field inline">
            <label for="filter-tenant">Tenant</label>
            <input
              id="filter-tenant"
              name="tenant"
              value={filters.tenant}
              placeholder="All tenants"
            />
          </div>
        )}
        <div class="field inline">
          <label for="filter-status">Status</label>
          <select id="filter-status" name="status">
            <option value="" selected={!filters.status}>Any status</option>
            {ALL_STATUSES.map((s) => (
              <option key={s} value={s} selected={filters.status === s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" class="btn btn-secondary">Filter</button>
        {filtered && <a href="/admin/sessions" class="btn btn-quiet">Clear</a>}
      </form>
      {data.errors.map((e) => <Notice key={e} kind="error">{e}</Notice>)}
      {filters.cursor
        ? <LiveSessions {...props} />
        : <Island component={LiveSessions} props={props} />}
      <nav class="pager" aria-label="Pages">
        {filters.cursor && (
          <a href={href("/admin/sessions", { ...filters, cursor: "" })}>
            ← Newest
          </a>
        )}
        {snap.cursor && (
          <a
            href={href("/admin/sessions", { ...filters, cursor: snap.cursor })}
          >
            Older sessions →
          </a>
        )}
      </nav>
    </>
  );
}
