/**
 * API keys: the list (filter by tenant, paged), the mint form, and the mint result. A new
 * key's plaintext appears only in the answer to the POST that minted it: never in a URL,
 * a cookie or a stored flash, so nothing can show it a second time. A tenant
 * administrator lists and mints its own tenant's keys only (lib/auth/api_keys.ts).
 */
import {
  CreatedKey,
  EXPIRY_DAYS,
  MintForm,
  type MintInput,
} from "../../../components/KeyForms.tsx";
import { ConfirmAction } from "../../../components/ConfirmAction.tsx";
import {
  Csrf,
  DataTable,
  EmptyState,
  Notice,
  PageHeader,
  Time,
} from "../../../components/ui.tsx";
import { listApiKeys } from "../../../lib/auth/api_key_admin.ts";
import { type ApiKeyView, createApiKey } from "../../../lib/auth/api_keys.ts";
import { ApiError } from "../../../lib/errors.ts";
import { formatTime } from "../../../lib/console/format.ts";
import {
  consoleState,
  page,
  type PageProps,
  requireAdmin,
} from "../../../lib/console/render.tsx";
import { isOperator } from "../../../lib/principal.ts";
import type { Ctx } from "../../../lib/api/http.ts";

interface KeysData {
  keys: ApiKeyView[];
  cursor: string | null;
  tenant: string;
  /** The cursor this page was read with ("" for the first page). */
  pageCursor: string;
  listError?: string;
  revoked?: string;
  created?: { key: ApiKeyView; api_key: string };
  mint: MintInput;
  mintErrors: Record<string, string>;
}

const EMPTY_MINT: MintInput = {
  tenant_id: "",
  scopes: ["sessions:read", "sessions:write"],
  name: "",
  expires_in_days: "0",
};

async function load(
  ctx: Ctx,
  extra: Partial<KeysData>,
): Promise<KeysData> {
  const q = ctx.url.searchParams;
  const admin = requireAdmin(ctx);
  const tenant = isOperator(admin)
    ? (q.get("tenant") ?? "").trim()
    : admin.tenantId;
  const pageCursor = q.get("cursor") ?? "";
  const data: KeysData = {
    keys: [],
    cursor: null,
    tenant,
    pageCursor,
    mint: isOperator(admin)
      ? EMPTY_MINT
      : { ...EMPTY_MINT, tenant_id: admin.tenantId },
    mintErrors: {},
    ...extra,
  };
  try {
    const res = await listApiKeys(ctx.deps, admin, {
      tenant_id: tenant || undefined,
      cursor: pageCursor || undefined,
      limit: 25,
    });
    data.keys = res.keys;
    data.cursor = res.cursor;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) throw err;
    data.listError = err.param === "cursor"
      ? "That page link is no longer valid. Showing the first page instead."
      : "Tenant ids are 1 to 64 characters of A-Z, a-z, 0-9, _ or -.";
    if (err.param === "cursor") {
      const res = await listApiKeys(ctx.deps, admin, {
        tenant_id: tenant || undefined,
        limit: 25,
      });
      data.keys = res.keys;
      data.cursor = res.cursor;
      data.pageCursor = "";
    }
  }
  return data;
}

function show(ctx: Ctx, data: KeysData, status = 200): Response {
  return page(ctx, KeysPage, data, {
    title: "API keys",
    section: "keys",
    status,
  });
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const revoked = ctx.url.searchParams.get("revoked") ?? undefined;
    return show(ctx, await load(ctx, { revoked }));
  },

  /** Mints a key and answers with the page showing its plaintext, once. */
  async POST(ctx: Ctx): Promise<Response> {
    const form = consoleState(ctx).form;
    const mint: MintInput = {
      tenant_id: (form.get("tenant_id") ?? "").trim(),
      scopes: form.getAll("scopes"),
      name: (form.get("name") ?? "").trim(),
      expires_in_days: form.get("expires_in_days") ?? "0",
    };
    const days = Number(mint.expires_in_days);
    if (!(EXPIRY_DAYS as readonly number[]).includes(days)) {
      return show(
        ctx,
        await load(ctx, {
          mint,
          mintErrors: { expires_at: "Choose one of the offered expiries." },
        }),
        400,
      );
    }
    try {
      const created = await createApiKey(ctx.deps, requireAdmin(ctx), {
        tenant_id: mint.tenant_id,
        scopes: mint.scopes as ApiKeyView["scopes"],
        name: mint.name || undefined,
        expires_at: days > 0 ? ctx.deps.now() + days * 86_400_000 : undefined,
      });
      return show(ctx, await load(ctx, { created }), 201);
    } catch (err) {
      if (err instanceof ApiError && err.code === "AVTR_AUTH_FORBIDDEN") {
        return show(
          ctx,
          await load(ctx, {
            mint,
            mintErrors: {
              tenant_id:
                "You administer your own tenant only: mint keys for it.",
            },
          }),
          403,
        );
      }
      if (!(err instanceof ApiError) || err.status !== 400) throw err;
      const param = (err.param ?? "form").split(".")[0];
      const message = err.message.replace(/^[a-z_.\[\]0-9]+: /, "");
      return show(
        ctx,
        await load(ctx, { mint, mintErrors: { [param]: message } }),
        400,
      );
    }
  },
};

function keyState(k: ApiKeyView, now: number): { text: string; cls: string } {
  if (k.revoked_at !== undefined) return { text: "revoked", cls: "failed" };
  if (k.expires_at !== undefined && k.expires_at <= now) {
    return { text: "expired", cls: "ended" };
  }
  return { text: "active", cls: "active" };
}

function pageHref(tenant: string, cursor: string, operator: boolean): string {
  const q = new URLSearchParams();
  if (tenant && operator) q.set("tenant", tenant);
  if (cursor) q.set("cursor", cursor);
  const s = q.toString();
  return s ? `/admin/keys?${s}` : "/admin/keys";
}

export default function KeysPage(
  { data, csrf, now, admin }: PageProps<KeysData>,
) {
  const operator = admin !== null && isOperator(admin);
  return (
    <>
      <PageHeader
        title="API keys"
        lead="Keys authenticate calls to /v1/. Revocation takes effect on the next request, on every instance."
      />
      {data.created && <CreatedKey created={data.created} />}
      {data.revoked && (
        <Notice kind="success">
          Key <code>{data.revoked}</code>{" "}
          is revoked. Requests that use it are refused from now on.
        </Notice>
      )}
      <MintForm data={data} csrf={csrf} fixedTenant={!operator} />
      <section aria-labelledby="keys-title">
        <h2 id="keys-title">Keys</h2>
        {operator && (
          <form method="get" action="/admin/keys" class="filters" role="search">
            <div class="field inline">
              <label for="filter-tenant">Filter by tenant</label>
              <input
                id="filter-tenant"
                name="tenant"
                value={data.tenant}
                placeholder="All tenants"
                aria-invalid={data.listError && !data.pageCursor
                  ? "true"
                  : undefined}
              />
            </div>
            <button type="submit" class="btn btn-secondary">Filter</button>
            {data.tenant && (
              <a href="/admin/keys" class="btn btn-quiet">Clear</a>
            )}
          </form>
        )}
        {data.listError && <Notice kind="error">{data.listError}</Notice>}
        {data.keys.length === 0
          ? (
            <EmptyState
              title={data.tenant
                ? `No keys for tenant ${data.tenant}`
                : "No API keys yet"}
            >
              Mint one with the form; its plaintext is shown once.
            </EmptyState>
          )
          : (
            <DataTable
              label="API keys"
              columns={[
                "Key id",
                "Name",
                "Tenant",
                "Scopes",
                "Created (UTC)",
                "Last used",
                "Expires",
                "State",
              ]}
              actions
            >
              {data.keys.map((k) => {
                const st = keyState(k, now);
                return (
                  <tr key={k.key_id} data-key-id={k.key_id}>
                    <td data-label="Key id" class="mono">{k.key_id}</td>
                    <td data-label="Name">
                      {k.name ?? <span class="muted">—</span>}
                    </td>
                    <td data-label="Tenant">{k.tenant_id}</td>
                    <td data-label="Scopes" class="scopes">
                      <span>
                        {k.scopes.map((s) => <code key={s}>{s}</code>)}
                      </span>
                    </td>
                    <td class="nowrap" data-label="Created">
                      <Time ms={k.created_at} now={now} />
                    </td>
                    <td class="nowrap" data-label="Last used">
                      <Time ms={k.last_used_at} now={now} />
                    </td>
                    <td class="nowrap" data-label="Expires">
                      {k.expires_at === undefined
                        ? <span class="muted">Never</span>
                        : <Time ms={k.expires_at} now={now} />}
                    </td>
                    <td class="nowrap" data-label="State">
                      <span class={`badge badge-${st.cls}`}>
                        {st.text}
                      </span>
                      {k.revoked_at !== undefined && (
                        <span class="sub">
                          {formatTime(k.revoked_at)}
                        </span>
                      )}
                    </td>
                    <td>
                      {k.revoked_at === undefined && (
                        <form
                          method="post"
                          action={`/admin/keys/${k.key_id}/revoke`}
                        >
                          <Csrf token={csrf} />
                          <ConfirmAction
                            label="Revoke"
                            message={`Revoke key ${k.key_id}${
                              k.name ? ` (${k.name})` : ""
                            }? Requests that use it are refused at once. This cannot be undone.`}
                            confirmLabel="Revoke key"
                            danger
                          />
                        </form>
                      )}
                    </td>
                  </tr>
                );
              })}
            </DataTable>
          )}
        <nav class="pager" aria-label="Pages">
          {data.pageCursor && (
            <a href={pageHref(data.tenant, "", operator)}>← First page</a>
          )}
          {data.cursor && (
            <a href={pageHref(data.tenant, data.cursor, operator)}>
              Next page →
            </a>
          )}
        </nav>
      </section>
    </>
  );
}
