/**
 * The console's view of webhook deliveries: events with their attempts, newest first,
 * and a manual retry of an event that failed or went to the dead letters.
 */
import type { AppDeps } from "../deps.ts";
import {
  administers,
  type Administrator,
  visibleTenant,
} from "../principal.ts";
import { kvTry } from "../kv/store.ts";
import {
  deadKey,
  eventKey,
  QUEUE_BACKOFF_MS,
  WEBHOOK_RETENTION_MS,
  type WebhookAttempt,
  type WebhookEventRecord,
  type WebhookQueueMessage,
} from "./events.ts";

export interface DeliveryView extends WebhookEventRecord {
  attempt_log: WebhookAttempt[];
}

export interface ListDeliveriesOptions {
  /** Only this tenant's events. */
  tenant_id?: string;
  /** Only dead letters. */
  only_dead?: boolean;
  /** Page size, 1..100 (default 20). */
  limit?: number;
  /** From a previous page's `cursor`. */
  cursor?: string;
}

export interface DeliveryPage {
  items: DeliveryView[];
  /** Set when more items may follow. */
  cursor?: string;
}

async function withAttempts(
  deps: AppDeps,
  event: WebhookEventRecord,
): Promise<DeliveryView> {
  const attempt_log: WebhookAttempt[] = [];
  const iter = deps.kv.list<WebhookAttempt>({
    prefix: ["webhook_attempts", event.event_id],
  });
  for await (const e of iter) attempt_log.push(e.value);
  return { ...event, attempt_log };
}

/**
 * Lists webhook events (newest first) with their attempts and state
 * (pending / delivered / failed / dead), all tenants or one, as `by` may see them: a
 * tenant administrator its own tenant's only, whatever `options` asks for.
 */
export async function listDeliveries(
  deps: AppDeps,
  by: Administrator,
  options: ListDeliveriesOptions = {},
): Promise<DeliveryPage> {
  const limit = Math.min(100, Math.max(1, Math.floor(options.limit ?? 20)));
  const tenant = visibleTenant(by, options.tenant_id);
  if (tenant === null) return { items: [] };
  return await kvTry(async () => {
    const prefix = options.only_dead
      ? ["webhook_dead"]
      : tenant !== undefined
      ? ["webhook_events_by_tenant", tenant]
      : ["webhook_events"];
    const iter = deps.kv.list<string | WebhookEventRecord>({ prefix }, {
      reverse: true,
      limit,
      cursor: options.cursor,
    });
    const items: DeliveryView[] = [];
    let seen = 0;
    for await (const entry of iter) {
      seen++;
      let event: WebhookEventRecord | null;
      if (typeof entry.value === "string") {
        event = (await deps.kv.get<WebhookEventRecord>(eventKey(entry.value)))
          .value;
      } else {
        event = entry.value;
      }
      if (!event) continue;
      if (tenant !== undefined && event.tenant_id !== tenant) continue;
      items.push(await withAttempts(deps, event));
    }
    const page: DeliveryPage = { items };
    if (seen === limit && iter.cursor) page.cursor = iter.cursor;
    return page;
  });
}

export type RetryResult =
  | { ok: true; event: WebhookEventRecord }
  | { ok: false; reason: "not_found" | "not_retryable" };

/**
 * Sends a failed or dead event again now, with the same `webhook-id`, on behalf of `by`
 * (another tenant's event is `not_found` to a tenant administrator). For a dead letter
 * this is one more attempt (failing again returns it to the dead letters); for a failed
 * event it brings the scheduled retry forward (the schedule then goes on).
 */
export async function retryDelivery(
  deps: AppDeps,
  by: Administrator,
  eventId: string,
): Promise<RetryResult> {
  return await kvTry(async () => {
    for (;;) {
      const entry = await deps.kv.get<WebhookEventRecord>(eventKey(eventId));
      const event = entry.value;
      if (!event || !administers(by, event.tenant_id)) {
        return { ok: false, reason: "not_found" } as const;
      }
      if (event.state !== "dead" && event.state !== "failed") {
        return { ok: false, reason: "not_retryable" } as const;
      }
      const next: WebhookEventRecord = { ...event, state: "pending" };
      delete next.next_attempt_at;
      delete next.dead_reason;
      if (event.state === "dead") next.final_attempt = event.attempts + 1;
      const msg: WebhookQueueMessage = {
        kind: "webhook",
        event_id: eventId,
        attempt: event.attempts + 1,
      };
      const res = await deps.kv.atomic().check(entry)
        .set(eventKey(eventId), next, { expireIn: WEBHOOK_RETENTION_MS })
        .delete(deadKey(eventId))
        .enqueue(msg, { backoffSchedule: QUEUE_BACKOFF_MS })
        .commit();
      if (res.ok) {
        deps.log.info("webhook retry requested", { event_id: eventId });
        return { ok: true, event: next } as const;
      }
    }
  });
}

/**
 * Reads one event with its attempts (for the console), or null when there is none or
 * `by` does not administer its tenant.
 */
export async function getDelivery(
  deps: AppDeps,
  by: Administrator,
  eventId: string,
): Promise<DeliveryView | null> {
  return await kvTry(async () => {
    const event = (await deps.kv.get<WebhookEventRecord>(eventKey(eventId)))
      .value;
    return event && administers(by, event.tenant_id)
      ? await withAttempts(deps, event)
      : null;
  });
}
