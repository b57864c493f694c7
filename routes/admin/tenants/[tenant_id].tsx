/**
 * One tenant: its concurrency limit, the IdP organizations mapped to it, its webhook
 * signing secret (revealed only in the answer to a POST, never stored or put in a URL;
 * rotated with confirmation) and its recent webhook deliveries with a retry action.
 * A tenant administrator reaches its own tenant's page only (any other is "not found"):
 * it reveals and rotates its secret and retries its deliveries; the limit and the
 * organization mappings are the operator's to change (DECISIONS 2).
 */
import { MappingTable } from "../../../components/MappingTable.tsx";
import { TenantUsage } from "../../../components/TenantUsage.tsx";
import {
  Deliveries,
  SecretSection,
  tenantPath as base,
} from "../../../components/TenantWebhooks.tsx";
import {
  Csrf,
  FieldError,
  Notice,
  PageHeader,
} from "../../../components/ui.tsx";
import { redirect } from "../../../lib/console/http.ts";
import { liveCount } from "../../../lib/console/live.ts";
import {
  consoleState,
  errorPage,
  page,
  type PageProps,
  requireAdmin,
} from "../../../lib/console/render.tsx";
import { ApiError } from "../../../lib/errors.ts";
import type { Ctx } from "../../../lib/api/http.ts";
import { TENANT_ID_PATTERN } from "../../../lib/auth/api_keys.ts";
import { administers, isOperator } from "../../../lib/principal.ts";
import {
  deleteOrgMapping,
  listOrgMappings,
  type OrgMapping,
  setOrgMapping,
} from "../../../lib/auth/idp_orgs.ts";
import {
  getTenantSettings,
  MAX_CONCURRENT_SESSIONS_LIMIT,
  setTenantSettings,
  type TenantSettings,
} from "../../../lib/tenants.ts";
import { tenantUsage, type UsageTotal } from "../../../lib/sessions.ts";
import {
  type DeliveryView,
  getWebhookSecret,
  listDeliveries,
  retryDelivery,
  rotateWebhookSecret,
  type WebhookSecretView,
} from "../../../lib/webhooks/index.ts";

interface TenantData {
  tenant: string;
  settings: TenantSettings;
  defaultLimit: number;
  live: number;
  mappings: OrgMapping[];
  deliveries: DeliveryView[];
  usage: { last24h: UsageTotal; last30d: UsageTotal };
  notice?: string;
  secret?: WebhookSecretView & { rotated: boolean };
  confirm?: "rotate_secret" | string;
  limitInput?: string;
  errors: Record<string, string>;
}

async function load(
  ctx: Ctx,
  tenant: string,
  extra: Partial<TenantData>,
): Promise<TenantData> {
  const [settings, live, mappings, deliveries, usage] = await Promise.all([
    getTenantSettings(ctx.deps, tenant),
    liveCount(ctx.deps, tenant),
    listOrgMappings(ctx.deps),
    listDeliveries(ctx.deps, requireAdmin(ctx), {
      tenant_id: tenant,
      limit: 20,
    }),
    tenantUsage(ctx.deps, tenant),
  ]);
  return {
    tenant,
    settings,
    defaultLimit: ctx.deps.config.maxConcurrentSessions,
    live,
    mappings: mappings.filter((m) => m.tenant_id === tenant),
    deliveries: deliveries.items,
    usage,
    errors: {},
    ...extra,
  };
}

function show(ctx: Ctx, data: TenantData, status = 200): Response {
  return page(ctx, TenantPage, data, {
    title: `Tenant ${data.tenant}`,
    section: "tenants",
    status,
  });
}

/** The tenant of the URL, when it is one the signed-in administrator administers. */
function tenantOf(ctx: Ctx): string | null {
  const t = ctx.params.tenant_id;
  return TENANT_ID_PATTERN.test(t) && administers(requireAdmin(ctx), t)
    ? t
    : null;
}

/** The limit and the organization mappings: the operator's to change. */
function operatorOnly(ctx: Ctx): Response {
  return errorPage(
    ctx,
    403,
    "Operator only",
    "Only the operator changes a tenant's concurrency limit and organization mappings.",
  );
}

function badTenant(ctx: Ctx): Response {
  return errorPage(
    ctx,
    404,
    "Tenant not found",
    "There is no tenant you administer with this id (tenant ids are 1 to 64 characters of A-Z, a-z, 0-9, _ or -).",
  );
}

function fieldMessage(err: ApiError): string {
  return err.message.replace(/^[a-z_]+: /, "");
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const tenant = tenantOf(ctx);
    if (!tenant) return badTenant(ctx);
    return show(
      ctx,
      await load(ctx, tenant, {
        notice: ctx.url.searchParams.get("notice") ?? undefined,
      }),
    );
  },

  async POST(ctx: Ctx): Promise<Response> {
    const tenant = tenantOf(ctx);
    if (!tenant) return badTenant(ctx);
    const form = consoleState(ctx).form;
    const done = (text: string) =>
      redirect(`${base(tenant)}?notice=${encodeURIComponent(text)}`);
    const admin = requireAdmin(ctx);
    const action = form.get("action");
    if (
      !isOperator(admin) &&
      (action === "set_limit" || action === "map_org" || action === "unmap")
    ) {
      return operatorOnly(ctx);
    }
    switch (action) {
      case "set_limit": {
        const raw = (form.get("max_concurrent_sessions") ?? "").trim();
        const value = raw === "" ? null : Number(raw);
        try {
          await setTenantSettings(ctx.deps, tenant, {
            max_concurrent_sessions: value,
          });
        } catch (err) {
          if (!(err instanceof ApiError) || err.status !== 400) throw err;
          return show(
            ctx,
            await load(ctx, tenant, {
              limitInput: raw,
              errors: { limit: fieldMessage(err) },
            }),
            400,
          );
        }
        return done(
          value === null
            ? "Limit reset to the deployment default"
            : `Limit set to ${value} concurrent sessions`,
        );
      }
      case "map_org": {
        const orgId = (form.get("org_id") ?? "").trim();
        try {
          await setOrgMapping(ctx.deps, orgId, tenant);
        } catch (err) {
          if (!(err instanceof ApiError) || err.status !== 400) throw err;
          return show(
            ctx,
            await load(ctx, tenant, { errors: { org_id: fieldMessage(err) } }),
            400,
          );
        }
        return done(`Organization ${orgId} now maps to this tenant`);
      }
      case "unmap": {
        const orgId = (form.get("org_id") ?? "").trim();
        if (form.get("confirm") !== "yes") {
          return show(
            ctx,
            await load(ctx, tenant, { errors: { confirm_org: orgId } }),
          );
        }
        const removed = await deleteOrgMapping(ctx.deps, orgId);
        return done(
          removed ? `Mapping of ${orgId} removed` : `${orgId} had no mapping`,
        );
      }
      case "reveal_secret": {
        const secret = await getWebhookSecret(ctx.deps, admin, tenant);
        return show(
          ctx,
          await load(ctx, tenant, { secret: { ...secret, rotated: false } }),
        );
      }
      case "rotate_secret": {
        if (form.get("confirm") !== "yes") {
          return show(
            ctx,
            await load(ctx, tenant, { confirm: "rotate_secret" }),
          );
        }
        const secret = await rotateWebhookSecret(ctx.deps, admin, tenant);
        ctx.deps.log.info("webhook secret rotated", { tenant });
        return show(
          ctx,
          await load(ctx, tenant, { secret: { ...secret, rotated: true } }),
        );
      }
      case "retry_delivery": {
        const eventId = form.get("event_id") ?? "";
        const res = await retryDelivery(ctx.deps, admin, eventId);
        if (!res.ok) {
          const why = res.reason === "not_found"
            ? "That delivery no longer exists."
            : "Only failed or dead deliveries can be retried.";
          return show(
            ctx,
            await load(ctx, tenant, { errors: { deliveries: why } }),
            409,
          );
        }
        return done(`Delivery ${eventId} queued for another attempt`);
      }
      default:
        return show(
          ctx,
          await load(ctx, tenant, { errors: { form: "Unknown action." } }),
          400,
        );
    }
  },
};

export default function TenantPage(
  { data, csrf, admin }: PageProps<TenantData>,
) {
  const operator = admin !== null && isOperator(admin);
  const action = base(data.tenant);
  const limit = data.settings.max_concurrent_sessions;
  const errs = data.errors;
  return (
    <>
      {operator && (
        <p class="crumbs">
          <a href="/admin/tenants">Tenants</a> /
        </p>
      )}
      <PageHeader
        title={`Tenant ${data.tenant}`}
        actions={
          <>
            <a
              class="btn btn-quiet"
              href={`/admin/sessions?tenant=${encodeURIComponent(data.tenant)}`}
            >
              Sessions
            </a>
            <a
              class="btn btn-quiet"
              href={`/admin/keys?tenant=${encodeURIComponent(data.tenant)}`}
            >
              API keys
            </a>
          </>
        }
      />
      {data.notice && <Notice kind="success">{data.notice}</Notice>}
      {errs.form && <Notice kind="error">{errs.form}</Notice>}
      <div class="split">
        <section class="card grow" aria-labelledby="limit-title">
          <h2 id="limit-title">Concurrent sessions</h2>
          <p>
            <strong data-testid="tenant-live">{data.live}</strong>{" "}
            live now, limit <strong>{limit ?? data.defaultLimit}</strong>
            {limit === undefined && (
              <span class="muted">(deployment default)</span>
            )}.
          </p>
          {!operator && (
            <p class="muted">The operator sets this tenant's limit.</p>
          )}
          {operator && (
            <form method="post" action={action} class="form">
              <Csrf token={csrf} />
              <input type="hidden" name="action" value="set_limit" />
              <div class="field">
                <label for="limit">Limit</label>
                <input
                  id="limit"
                  name="max_concurrent_sessions"
                  type="number"
                  min={1}
                  max={MAX_CONCURRENT_SESSIONS_LIMIT}
                  inputMode="numeric"
                  value={data.limitInput ??
                    (limit !== undefined ? String(limit) : "")}
                  placeholder={`${data.defaultLimit} (default)`}
                  aria-invalid={errs.limit ? "true" : undefined}
                  aria-describedby={errs.limit ? "limit-error" : "limit-help"}
                />
                <FieldError id="limit-error" message={errs.limit} />
                {!errs.limit && (
                  <p id="limit-help" class="help">
                    Leave empty to use the deployment default.
                  </p>
                )}
              </div>
              <button type="submit" class="btn btn-primary">Save limit</button>
            </form>
          )}
        </section>
        <div class="side">
          <SecretSection data={data} csrf={csrf} />
        </div>
      </div>
      <TenantUsage usage={data.usage} />
      {operator && (
        <section aria-labelledby="orgs-title">
          <h2 id="orgs-title">Identity-provider organizations</h2>
          <MappingTable
            mappings={data.mappings}
            csrf={csrf}
            action={action}
            confirmOrg={errs.confirm_org}
          />
          <form method="post" action={action} class="filters">
            <Csrf token={csrf} />
            <input type="hidden" name="action" value="map_org" />
            <div class="field inline">
              <label for="map-org">Map organization</label>
              <input
                id="map-org"
                name="org_id"
                required
                placeholder="org_id claim"
                aria-invalid={errs.org_id ? "true" : undefined}
                aria-describedby={errs.org_id ? "map-org-error" : undefined}
              />
            </div>
            <button type="submit" class="btn btn-secondary">
              Map to {data.tenant}
            </button>
            <FieldError id="map-org-error" message={errs.org_id} />
          </form>
        </section>
      )}
      <Deliveries
        data={{ ...data, deliveriesError: data.errors.deliveries }}
        csrf={csrf}
      />
    </>
  );
}
