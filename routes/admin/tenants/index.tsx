/**
 * Tenants: every tenant the service knows of (settings, sessions, IdP mappings) with its
 * limit and live sessions, and the identity-provider organization → tenant mappings.
 * The operator's page: a tenant administrator is sent to its own tenant's page, and
 * cannot change mappings (DECISIONS 2).
 */
import { MappingTable } from "../../../components/MappingTable.tsx";
import { tenantPath } from "../../../components/TenantWebhooks.tsx";
import {
  Csrf,
  DataTable,
  EmptyState,
  FieldError,
  Notice,
  PageHeader,
} from "../../../components/ui.tsx";
import { redirect } from "../../../lib/console/http.ts";
import {
  consoleState,
  errorPage,
  page,
  type PageProps,
  requireAdmin,
} from "../../../lib/console/render.tsx";
import { isOperator } from "../../../lib/principal.ts";
import { ApiError } from "../../../lib/errors.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import {
  deleteOrgMapping,
  listOrgMappings,
  type OrgMapping,
  setOrgMapping,
} from "../../../lib/auth/idp_orgs.ts";
import { counterValue } from "../../../lib/sessions.ts";
import { kvTry } from "../../../lib/kv/store.ts";
import { listTenantSettings } from "../../../lib/tenants.ts";
import { TENANT_ID_PATTERN } from "../../../lib/auth/api_keys.ts";

interface TenantRow {
  tenant_id: string;
  limit?: number;
  live: number;
  orgs: number;
}

interface TenantsData {
  tenants: TenantRow[];
  mappings: OrgMapping[];
  defaultLimit: number;
  notice?: string;
  openError?: string;
  open: string;
  map: { org_id: string; tenant_id: string };
  mapErrors: Record<string, string>;
}

async function load(
  ctx: Ctx,
  extra: Partial<TenantsData>,
): Promise<TenantsData> {
  const [settings, mappings, counters] = await Promise.all([
    listTenantSettings(ctx.deps),
    listOrgMappings(ctx.deps),
    kvTry(async () => {
      const out = new Map<string, number>();
      for await (
        const e of ctx.deps.kv.list({ prefix: ["tenant_open_sessions"] })
      ) {
        out.set(String(e.key[1]), counterValue(e));
      }
      return out;
    }),
  ]);
  const rows = new Map<string, TenantRow>();
  const row = (id: string) => {
    let r = rows.get(id);
    if (!r) rows.set(id, r = { tenant_id: id, live: 0, orgs: 0 });
    return r;
  };
  for (const s of settings) row(s.tenant_id).limit = s.max_concurrent_sessions;
  for (const [id, n] of counters) row(id).live = n;
  for (const m of mappings) row(m.tenant_id).orgs++;
  return {
    tenants: [...rows.values()].sort((a, b) =>
      a.tenant_id < b.tenant_id ? -1 : 1
    ),
    mappings,
    defaultLimit: ctx.deps.config.maxConcurrentSessions,
    open: "",
    map: { org_id: "", tenant_id: "" },
    mapErrors: {},
    ...extra,
  };
}

function show(ctx: Ctx, data: TenantsData, status = 200): Response {
  return page(ctx, TenantsPage, data, {
    title: "Tenants",
    section: "tenants",
    status,
  });
}

/** A tenant administrator's tenants page is its own tenant's page. */
function ownTenant(ctx: Ctx): Response | null {
  const admin = requireAdmin(ctx);
  return isOperator(admin) ? null : redirect(tenantPath(admin.tenantId));
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const own = ownTenant(ctx);
    if (own) return own;
    const q = ctx.url.searchParams;
    const open = (q.get("open") ?? "").trim();
    if (open) {
      if (TENANT_ID_PATTERN.test(open)) {
        return redirect(tenantPath(open));
      }
      return show(
        ctx,
        await load(ctx, {
          open,
          openError:
            "Tenant ids are 1 to 64 characters of A-Z, a-z, 0-9, _ or -.",
        }),
        400,
      );
    }
    return show(ctx, await load(ctx, { notice: q.get("notice") ?? undefined }));
  },

  /** `action=map` (org_id, tenant_id) or `action=unmap` (org_id). */
  async POST(ctx: Ctx): Promise<Response> {
    if (!isOperator(requireAdmin(ctx))) {
      return errorPage(
        ctx,
        403,
        "Operator only",
        "Only the operator maps identity-provider organizations to tenants.",
      );
    }
    const form = consoleState(ctx).form;
    const orgId = (form.get("org_id") ?? "").trim();
    if (form.get("action") === "unmap") {
      if (form.get("confirm") !== "yes") {
        return show(
          ctx,
          await load(ctx, {
            notice: undefined,
            mapErrors: { confirm: orgId },
          }),
        );
      }
      const removed = await deleteOrgMapping(ctx.deps, orgId);
      const text = removed
        ? `Mapping of ${orgId} removed`
        : `${orgId} had no mapping`;
      return redirect(`/admin/tenants?notice=${encodeURIComponent(text)}`);
    }
    const tenantId = (form.get("tenant_id") ?? "").trim();
    try {
      await setOrgMapping(ctx.deps, orgId, tenantId);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 400) throw err;
      const param = err.param ?? "org_id";
      return show(
        ctx,
        await load(ctx, {
          map: { org_id: orgId, tenant_id: tenantId },
          mapErrors: { [param]: err.message.replace(/^[a-z_]+: /, "") },
        }),
        400,
      );
    }
    const text = `Organization ${orgId} now maps to tenant ${tenantId}`;
    return redirect(`/admin/tenants?notice=${encodeURIComponent(text)}`);
  },
};

export default function TenantsPage({ data, csrf }: PageProps<TenantsData>) {
  const errs = data.mapErrors;
  return (
    <>
      <PageHeader
        title="Tenants"
        lead="Concurrency limits, identity-provider organizations and webhooks, per tenant."
      />
      {data.notice && <Notice kind="success">{data.notice}</Notice>}
      <form method="get" action="/admin/tenants" class="filters">
        <div class="field inline">
          <label for="open-tenant">Open tenant</label>
          <input
            id="open-tenant"
            name="open"
            value={data.open}
            required
            aria-invalid={data.openError ? "true" : undefined}
            aria-describedby={data.openError ? "open-error" : undefined}
          />
        </div>
        <button type="submit" class="btn btn-secondary">Open</button>
        <FieldError id="open-error" message={data.openError} />
      </form>
      <section aria-labelledby="tenants-title">
        <h2 id="tenants-title">Known tenants</h2>
        {data.tenants.length === 0
          ? (
            <EmptyState title="No tenants yet">
              A tenant appears here once it has sessions, settings or a mapped
              organization. Open any tenant id above to configure it.
            </EmptyState>
          )
          : (
            <DataTable
              label="Tenants"
              columns={[
                "Tenant",
                { label: "Live sessions", class: "num" },
                { label: "Concurrency limit", class: "num" },
                { label: "Mapped orgs", class: "num" },
              ]}
            >
              {data.tenants.map((t) => (
                <tr key={t.tenant_id}>
                  <td data-label="Tenant">
                    <a href={tenantPath(t.tenant_id)}>{t.tenant_id}</a>
                  </td>
                  <td data-label="Live sessions" class="num">{t.live}</td>
                  <td data-label="Concurrency limit" class="num">
                    {t.limit ?? (
                      <span class="muted">
                        {data.defaultLimit} (default)
                      </span>
                    )}
                  </td>
                  <td data-label="Mapped orgs" class="num">{t.orgs}</td>
                </tr>
              ))}
            </DataTable>
          )}
      </section>
      <section aria-labelledby="orgs-title">
        <h2 id="orgs-title">Identity-provider organizations</h2>
        <MappingTable
          mappings={data.mappings}
          csrf={csrf}
          action="/admin/tenants"
          confirmOrg={errs.confirm}
        />
        <form
          method="post"
          action="/admin/tenants"
          class="card form inline-form"
          aria-labelledby="map-title"
        >
          <h3 id="map-title">Map an organization</h3>
          <Csrf token={csrf} />
          <input type="hidden" name="action" value="map" />
          <div class="field">
            <label for="map-org">Organization (org_id claim)</label>
            <input
              id="map-org"
              name="org_id"
              required
              value={data.map.org_id}
              aria-invalid={errs.org_id ? "true" : undefined}
              aria-describedby={errs.org_id ? "map-org-error" : undefined}
            />
            <FieldError id="map-org-error" message={errs.org_id} />
          </div>
          <div class="field">
            <label for="map-tenant">Tenant</label>
            <input
              id="map-tenant"
              name="tenant_id"
              required
              value={data.map.tenant_id}
              aria-invalid={errs.tenant_id ? "true" : undefined}
              aria-describedby={errs.tenant_id ? "map-tenant-error" : undefined}
            />
            <FieldError id="map-tenant-error" message={errs.tenant_id} />
          </div>
          <button type="submit" class="btn btn-primary">Save mapping</button>
        </form>
      </section>
    </>
  );
}
