/**
 * Webhook delivery from the KV queue: one attempt per queue message, at least once.
 * Each attempt is recorded, and the event's next step (delivered, a retry enqueued with
 * a delay, or a dead letter) commits atomically with it, checked against the event
 * record read, so a redelivered or stale message does nothing.
 */
import type { AppDeps } from "../deps.ts";
import { assertPublicTarget, TargetRefusedError } from "../net_guard.ts";
import { queueShutdownSignal } from "../kv/queue.ts";
import {
  attemptKey,
  deadKey,
  eventKey,
  QUEUE_BACKOFF_MS,
  WEBHOOK_RETENTION_MS,
  type WebhookAttempt,
  type WebhookEventRecord,
  type WebhookQueueMessage,
} from "./events.ts";
import { signingSecrets } from "./secrets.ts";
import { signatureHeaders } from "./sign.ts";

/** At most this much of a receiver's response body is read, then the rest is dropped. */
export const MAX_RESPONSE_BYTES = 4096;
/** A `Retry-After` longer than this is cut to it. */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

/** What one attempt came to. */
export interface AttemptOutcome {
  status?: number;
  error?: string;
  latency_ms: number;
  /** No retry can help: refused target or 410. */
  permanent?: string;
  /** Receiver-requested wait (429/503 `Retry-After`), ms. */
  retryAfterMs?: number;
}

/** The wait a `Retry-After` value asks for (delta seconds or HTTP date), or undefined. */
export function parseRetryAfter(
  value: string | null,
  now: number,
): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  let ms: number;
  if (/^\d+$/.test(v)) {
    ms = Number(v) * 1000;
  } else {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}

/** The delay before retry number `retry` (1-based), with ±10% jitter. */
export function retryDelay(
  schedule: number[],
  retry: number,
  random: () => number = Math.random,
): number {
  const base = schedule[Math.min(retry, schedule.length) - 1] ?? 0;
  return Math.round(base * (0.9 + 0.2 * random()));
}

/** Reads at most `limit` bytes of `res`'s body, then cancels the rest. */
async function drainBounded(res: Response, limit: number): Promise<void> {
  if (!res.body) return;
  const reader = res.body.getReader();
  let read = 0;
  try {
    while (read < limit) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** An error message safe to keep: no URL (it may carry the receiver's own token). */
function describeError(err: unknown): string {
  const msg = err instanceof Error
    ? `${err.name}: ${err.message}`
    : String(err);
  return msg.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"')]+/gi, "[url]").slice(
    0,
    300,
  );
}

/** Makes one signed POST of `event` and reports the outcome (never throws for HTTP). */
export async function attemptDelivery(
  deps: AppDeps,
  event: WebhookEventRecord,
  secrets: string[],
): Promise<AttemptOutcome> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    url = await assertPublicTarget(event.url, {
      allowPrivate: deps.config.allowPrivateNetworkTargets,
      schemes: ["https:"],
    });
  } catch (err) {
    const reason = err instanceof TargetRefusedError
      ? err.message
      : "target refused";
    return { error: reason, permanent: reason, latency_ms: latency() };
  }
  const shutdown = queueShutdownSignal(deps);
  const signal = AbortSignal.any([
    AbortSignal.timeout(deps.config.webhookTimeoutMs),
    shutdown,
  ]);
  const timestampS = Math.floor(deps.now() / 1000);
  try {
    const res = await fetch(url, {
      method: "POST",
      body: event.body,
      redirect: "manual",
      signal,
      headers: {
        "content-type": "application/json",
        "user-agent": "avatar-session-service-webhooks/1",
        ...signatureHeaders(secrets, event.event_id, timestampS, event.body),
      },
    });
    await drainBounded(res, MAX_RESPONSE_BYTES).catch(() => {});
    const out: AttemptOutcome = { status: res.status, latency_ms: latency() };
    if (res.status === 410) out.permanent = "gone (HTTP 410)";
    if (res.status === 429 || res.status === 503) {
      out.retryAfterMs = parseRetryAfter(
        res.headers.get("retry-after"),
        deps.now(),
      );
    }
    return out;
  } catch (err) {
    if (shutdown.aborted) throw err;
    const error = signal.aborted
      ? `timeout after ${deps.config.webhookTimeoutMs} ms`
      : describeError(err);
    return { error, latency_ms: latency() };
  }
}

function isWebhookMessage(msg: unknown): msg is WebhookQueueMessage {
  const m = msg as Partial<WebhookQueueMessage>;
  return typeof m?.event_id === "string" && Number.isInteger(m.attempt);
}

/**
 * Handles one `webhook` queue message: makes the attempt it names if the event still
 * waits for exactly that attempt, then records it and commits the next step.
 */
export async function handleWebhookMessage(
  deps: AppDeps,
  msg: unknown,
): Promise<void> {
  if (!isWebhookMessage(msg)) {
    deps.log.warn("malformed webhook queue message dropped");
    return;
  }
  const entry = await deps.kv.get<WebhookEventRecord>(eventKey(msg.event_id));
  const event = entry.value;
  const skip = (reason: string) =>
    deps.log.debug("webhook message ignored", {
      event_id: msg.event_id,
      attempt: msg.attempt,
      reason,
    });
  if (!event) return skip("no such event");
  if (event.state === "delivered" || event.state === "dead") {
    return skip(`event is ${event.state}`);
  }
  if (msg.attempt !== event.attempts + 1) return skip("stale attempt");

  const n = msg.attempt;
  const secrets = await signingSecrets(deps, event.tenant_id);
  const at = deps.now();
  const outcome = await attemptDelivery(deps, event, secrets);
  const now = deps.now();

  const attempt: WebhookAttempt = { n, at, latency_ms: outcome.latency_ms };
  if (outcome.status !== undefined) attempt.status = outcome.status;
  if (outcome.error !== undefined) attempt.error = outcome.error;
  const ok = outcome.status !== undefined && outcome.status >= 200 &&
    outcome.status < 300;

  const next: WebhookEventRecord = {
    ...event,
    attempts: n,
    last_attempt_at: at,
    last_result: outcome.status !== undefined
      ? `HTTP ${outcome.status}`
      : outcome.error,
    expires_at: now + WEBHOOK_RETENTION_MS,
  };
  delete next.next_attempt_at;
  const expireIn = WEBHOOK_RETENTION_MS;
  const op = deps.kv.atomic().check(entry)
    .set(attemptKey(event.event_id, n), attempt, { expireIn });
  if (ok) {
    next.state = "delivered";
    next.delivered_at = now;
  } else if (outcome.permanent || n >= event.final_attempt) {
    next.state = "dead";
    next.dead_reason = outcome.permanent ??
      `retries exhausted (last: ${next.last_result})`;
    op.set(deadKey(event.event_id), event.event_id, { expireIn });
  } else {
    const scheduled = retryDelay(deps.config.webhookRetryScheduleMs, n);
    const delay = Math.max(scheduled, outcome.retryAfterMs ?? 0);
    next.state = "failed";
    next.next_attempt_at = now + delay;
    const retry: WebhookQueueMessage = {
      kind: "webhook",
      event_id: event.event_id,
      attempt: n + 1,
    };
    op.enqueue(retry, { delay, backoffSchedule: QUEUE_BACKOFF_MS });
  }
  op.set(eventKey(event.event_id), next, { expireIn });
  const res = await op.commit();
  if (!res.ok) {
    deps.log.warn("webhook attempt result dropped: event changed meanwhile", {
      event_id: event.event_id,
      attempt: n,
    });
    return;
  }
  deps.metrics.webhookAttempts.inc({
    type: event.type,
    outcome: next.state === "failed" ? "retry" : next.state,
  });
  deps.metrics.webhookLatency.observe(outcome.latency_ms / 1000);
  deps.log.info("webhook attempt", {
    event_id: event.event_id,
    type: event.type,
    attempt: n,
    status: outcome.status,
    error: outcome.error,
    state: next.state,
    latency_ms: outcome.latency_ms,
  });
}
