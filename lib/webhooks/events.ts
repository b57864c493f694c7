/**
 * Webhook events (DECISIONS 8): which session moves make an event, the body sent, the
 * durable event record, and the session hook that writes the record and enqueues its
 * first delivery in the same atomic commit as the move itself.
 */
import type { AppDeps } from "../deps.ts";
import { ulid } from "../ids.ts";

export type WebhookEventType =
  | "session.created"
  | "session.active"
  | "session.ended"
  | "session.failed";

/** pending: an attempt is queued now; failed: a retry is scheduled; dead: no more. */
export type DeliveryState = "pending" | "delivered" | "failed" | "dead";

/** What the webhook body carries about a session: never credentials or tokens. */
export interface WebhookEventData {
  session_id: string;
  status: string;
  provider_type: string;
  transport: string;
  created_at: number;
  started_at?: number;
  ended_at?: number;
  warning?: string;
  chunks_rendered?: number;
  duration_s?: number;
  /** Why the session ended (DECISIONS 4); on `session.ended` and `session.failed`. */
  end_reason?: string;
}

export interface WebhookEventBody {
  type: WebhookEventType;
  /** Epoch ms of the move. */
  timestamp: number;
  data: WebhookEventData;
}

/** The durable record of one event and its delivery, at `eventKey(event_id)`. */
export interface WebhookEventRecord {
  /** `msg_` + ULID; also the `webhook-id` header, stable across retries. */
  event_id: string;
  tenant_id: string;
  session_id: string;
  type: WebhookEventType;
  url: string;
  /** The exact JSON sent and signed. */
  body: string;
  created_at: number;
  state: DeliveryState;
  /** Attempts made so far. */
  attempts: number;
  /** After a failed attempt with this number no retry is scheduled (dead letter). */
  final_attempt: number;
  last_attempt_at?: number;
  /** Last outcome, e.g. `HTTP 500` or `timeout`. */
  last_result?: string;
  next_attempt_at?: number;
  delivered_at?: number;
  dead_reason?: string;
  /** KV may drop the record after this (also its `expireIn`). */
  expires_at: number;
}

/** One delivery attempt, at `attemptKey(event_id, n)`. */
export interface WebhookAttempt {
  n: number;
  at: number;
  status?: number;
  error?: string;
  latency_ms: number;
}

/** The queue message that asks for attempt `attempt` of an event. */
export interface WebhookQueueMessage {
  kind: "webhook";
  event_id: string;
  attempt: number;
  [field: string]: unknown;
}

/** Event records, attempts and indexes are kept this long after their last write. */
export const WEBHOOK_RETENTION_MS = 30 * 24 * 3600 * 1000;

export const eventKey = (eventId: string) => ["webhook_events", eventId];
export const eventByTenantKey = (tenantId: string, eventId: string) => [
  "webhook_events_by_tenant",
  tenantId,
  eventId,
];
export const attemptKey = (eventId: string, n: number) => [
  "webhook_attempts",
  eventId,
  n,
];
export const deadKey = (eventId: string) => ["webhook_dead", eventId];

/** Retries of the queue message itself when a handler throws (KV trouble). */
export const QUEUE_BACKOFF_MS = [1_000, 5_000, 30_000, 120_000, 600_000];

/**
 * The fields of a session record this module reads (lib/sessions.ts owns the rest): what
 * the event carries, plus whose it is and where it goes.
 */
type SessionView = WebhookEventData & {
  tenant_id: string;
  webhook_url?: string;
};

function asSession(value: unknown): SessionView | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  if (
    typeof v.session_id !== "string" || typeof v.tenant_id !== "string" ||
    typeof v.status !== "string"
  ) return null;
  return v as unknown as SessionView;
}

/** The event a move from `before` to `after` makes, or null (no event for this move). */
export function eventTypeForMove(
  before: string | null,
  after: string,
): WebhookEventType | null {
  if (before === after) return null;
  switch (after) {
    case "created":
      return before === null ? "session.created" : null;
    case "active":
      return "session.active";
    case "ended":
    case "ended_with_warnings":
      return "session.ended";
    case "failed":
      return "session.failed";
    default:
      return null;
  }
}

/** The body for `session`, with only the whitelisted, non-secret fields. */
export function eventBody(
  type: WebhookEventType,
  session: SessionView,
  timestamp: number,
): WebhookEventBody {
  const data: WebhookEventData = {
    session_id: session.session_id,
    status: session.status,
    provider_type: session.provider_type,
    transport: session.transport,
    created_at: session.created_at,
  };
  if (typeof session.started_at === "number") {
    data.started_at = session.started_at;
  }
  if (typeof session.ended_at === "number") data.ended_at = session.ended_at;
  if (typeof session.warning === "string" && session.warning) {
    data.warning = session.warning;
  }
  if (typeof session.chunks_rendered === "number") {
    data.chunks_rendered = session.chunks_rendered;
  }
  if (typeof session.duration_s === "number") {
    data.duration_s = session.duration_s;
  }
  if (
    (type === "session.ended" || type === "session.failed") &&
    typeof session.end_reason === "string"
  ) {
    data.end_reason = session.end_reason;
  }
  return { type, timestamp, data };
}

/**
 * The `inCommit` session hook: when the move makes an event and the session has a
 * `webhook_url`, adds the event record, its tenant index and the first delivery's queue
 * message to `op`, so the move and its event commit together or not at all.
 */
export function addEventToCommit(
  deps: AppDeps,
  op: Deno.AtomicOperation,
  before: unknown | null,
  after: unknown,
): WebhookEventRecord | null {
  const next = asSession(after);
  if (!next || !next.webhook_url) return null;
  const prev = before === null ? null : asSession(before);
  const type = eventTypeForMove(prev ? prev.status : null, next.status);
  if (!type) return null;
  const now = deps.now();
  const eventId = "msg_" + ulid(now);
  const record: WebhookEventRecord = {
    event_id: eventId,
    tenant_id: next.tenant_id,
    session_id: next.session_id,
    type,
    url: next.webhook_url,
    body: JSON.stringify(eventBody(type, next, now)),
    created_at: now,
    state: "pending",
    attempts: 0,
    final_attempt: deps.config.webhookRetryScheduleMs.length + 1,
    expires_at: now + WEBHOOK_RETENTION_MS,
  };
  const expireIn = WEBHOOK_RETENTION_MS;
  op.set(eventKey(eventId), record, { expireIn });
  op.set(eventByTenantKey(next.tenant_id, eventId), eventId, { expireIn });
  const msg: WebhookQueueMessage = {
    kind: "webhook",
    event_id: eventId,
    attempt: 1,
  };
  op.enqueue(msg, { backoffSchedule: QUEUE_BACKOFF_MS });
  return record;
}
