/**
 * The webhook panels of the tenant page: the signing secret (revealed or rotated only by
 * a POST, whose answer alone shows it) and the recent deliveries with a retry action.
 */
import CopyButton from "../islands/CopyButton.tsx";
import { formatTime } from "../lib/console/format.ts";
import { Island } from "../lib/console/island.tsx";
import type { DeliveryView, WebhookSecretView } from "../lib/webhooks/index.ts";
import { ConfirmAction, ConfirmForm } from "./ConfirmAction.tsx";
import {
  Csrf,
  DataTable,
  EmptyState,
  Notice,
  StatusBadge,
  Time,
} from "./ui.tsx";

export interface WebhookPanelData {
  tenant: string;
  deliveries: DeliveryView[];
  secret?: WebhookSecretView & { rotated: boolean };
  confirm?: string;
  deliveriesError?: string;
}

/** The console path of a tenant's page. */
export function tenantPath(tenant: string): string {
  return `/admin/tenants/${encodeURIComponent(tenant)}`;
}

/** A webhook URL without its query or fragment (they may carry the receiver's secrets). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search || u.hash ? "?…" : ""}`;
  } catch {
    return "(invalid URL)";
  }
}

export function SecretSection(props: { data: WebhookPanelData; csrf: string }) {
  const { data, csrf } = props;
  const action = tenantPath(data.tenant);
  return (
    <section class="card" aria-labelledby="secret-title">
      <h2 id="secret-title">Webhook signing secret</h2>
      <p class="muted">
        Deliveries are signed per Standard Webhooks (<code>
          webhook-signature
        </code>). The secret is shown only when you ask, in that answer alone.
      </p>
      {data.secret && (
        <Notice
          kind={data.secret.rotated ? "success" : "info"}
          title={data.secret.rotated ? "New secret in force" : "Current secret"}
        >
          <div class="secret-row">
            <code id="webhook-secret" class="secret">{data.secret.secret}</code>
            <Island
              component={CopyButton}
              props={{ targetId: "webhook-secret", label: "Copy secret" }}
              inline
            />
          </div>
          <p>
            {data.secret.source === "derived"
              ? "Derived for this tenant from the deployment's WEBHOOK_SECRET (no other tenant's deliveries verify with it). Rotate to give the tenant a stored secret of its own."
              : "This tenant's own secret."}
            {data.secret.previous_until !== undefined &&
              ` The replaced secret also signs until ${
                formatTime(data.secret.previous_until)
              }, so receivers can switch over.`}
          </p>
        </Notice>
      )}
      {data.confirm === "rotate_secret"
        ? (
          <Notice kind="warning" title="Rotate the signing secret?">
            <p>
              The current secret keeps signing for 24 hours alongside the new
              one, then stops.
            </p>
            <ConfirmForm
              action={action}
              csrf={csrf}
              value="rotate_secret"
              label="Rotate secret"
            />
          </Notice>
        )
        : (
          <form method="post" action={action} class="row">
            <Csrf token={csrf} />
            <button
              type="submit"
              name="action"
              value="reveal_secret"
              class="btn btn-secondary"
            >
              Reveal secret
            </button>
            <ConfirmAction
              label="Rotate secret"
              name="action"
              value="rotate_secret"
              message="Rotate the signing secret? The current one keeps signing for 24 hours alongside the new one."
              confirmLabel="Rotate secret"
              danger
            />
          </form>
        )}
    </section>
  );
}

export function Deliveries(props: { data: WebhookPanelData; csrf: string }) {
  const { data, csrf } = props;
  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Recent webhook deliveries</h2>
      {data.deliveriesError && (
        <Notice kind="error">{data.deliveriesError}</Notice>
      )}
      {data.deliveries.length === 0
        ? (
          <EmptyState title="No deliveries yet">
            Sessions created with a webhook_url send events here.
          </EmptyState>
        )
        : (
          <DataTable
            label="Webhook deliveries"
            columns={[
              "Event",
              "Type",
              "Session",
              "Target",
              "State",
              { label: "Attempts", class: "num" },
              "Last result",
              "Last attempt",
            ]}
            actions
          >
            {data.deliveries.map((d) => (
              <tr key={d.event_id} data-event-id={d.event_id}>
                <td data-label="Event" class="mono">{d.event_id}</td>
                <td data-label="Type">{d.type}</td>
                <td data-label="Session" class="mono">
                  <a
                    href={`/admin/sessions/${encodeURIComponent(d.session_id)}`}
                  >
                    {d.session_id}
                  </a>
                </td>
                <td data-label="Target" class="mono">
                  {displayUrl(d.url)}
                </td>
                <td data-label="State">
                  <StatusBadge status={d.state} />
                  {d.dead_reason && <span class="sub">{d.dead_reason}</span>}
                </td>
                <td data-label="Attempts" class="num">{d.attempts}</td>
                <td data-label="Last result">
                  {d.last_result ?? <span class="muted">—</span>}
                </td>
                <td data-label="Last attempt" class="nowrap">
                  <Time
                    ms={d.last_attempt_at}
                  />
                  {d.next_attempt_at !== undefined && (
                    <span class="sub">
                      next {formatTime(d.next_attempt_at)}
                    </span>
                  )}
                </td>
                <td>
                  {(d.state === "failed" || d.state === "dead") && (
                    <form method="post" action={tenantPath(data.tenant)}>
                      <Csrf token={csrf} />
                      <input
                        type="hidden"
                        name="event_id"
                        value={d.event_id}
                      />
                      <button
                        type="submit"
                        name="action"
                        value="retry_delivery"
                        class="btn btn-secondary"
                      >
                        Retry
                      </button>
                    </form>
                  )}
                </td>
              </tr>
            ))}
          </DataTable>
        )}
    </section>
  );
}
