/** The IdP organization → tenant mapping table, with remove buttons that ask first. */
import type { OrgMapping } from "../lib/auth/idp_orgs.ts";
import { ConfirmAction } from "./ConfirmAction.tsx";
import { tenantPath } from "./TenantWebhooks.tsx";
import { Csrf, DataTable, EmptyState, Time } from "./ui.tsx";

/** Mappings as a table; `confirmOrg` shows a server-side confirm for that org (no script). */
export function MappingTable(
  props: {
    mappings: OrgMapping[];
    csrf: string;
    action: string;
    confirmOrg?: string;
  },
) {
  if (props.mappings.length === 0) {
    return (
      <EmptyState title="No organizations mapped">
        Identity-provider tokens whose organization has no mapping are refused
        with AVTR_AUTH_IDP_ORG_UNMAPPED.
      </EmptyState>
    );
  }
  return (
    <DataTable
      label="Organization mappings"
      columns={["Organization (org_id)", "Tenant", "Mapped"]}
      actions
    >
      {props.mappings.map((m) => (
        <tr key={m.org_id}>
          <td class="mono" data-label="Organization">{m.org_id}</td>
          <td data-label="Tenant">
            <a href={tenantPath(m.tenant_id)}>{m.tenant_id}</a>
          </td>
          <td class="nowrap" data-label="Mapped">
            <Time ms={m.created_at} />
          </td>
          <td>
            <form method="post" action={props.action} class="row">
              <Csrf token={props.csrf} />
              <input type="hidden" name="org_id" value={m.org_id} />
              {props.confirmOrg === m.org_id
                ? (
                  <>
                    <input type="hidden" name="confirm" value="yes" />
                    <button
                      type="submit"
                      name="action"
                      value="unmap"
                      class="btn btn-danger"
                    >
                      Confirm removal
                    </button>
                  </>
                )
                : (
                  <ConfirmAction
                    label="Remove"
                    name="action"
                    value="unmap"
                    message={`Remove the mapping of ${m.org_id}? Its tokens are refused from then on.`}
                    confirmLabel="Remove mapping"
                    danger
                  />
                )}
            </form>
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
