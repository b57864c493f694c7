/**
 * Webhooks (SPEC 6.1, DECISIONS 8): signed, durable session lifecycle events delivered
 * from the Deno KV queue. `startWebhooks` wires the session hook and the queue handler;
 * the rest is the console's API. See docs/webhooks.md.
 */
import { ConfigError } from "../config.ts";
import type { AppDeps } from "../deps.ts";
import { registerQueueHandler } from "../kv/queue.ts";
import { handleWebhookMessage } from "./deliver.ts";
import { addEventToCommit } from "./events.ts";
import { MIN_SECRET_BYTES, secretKey } from "./sign.ts";

export {
  addEventToCommit,
  type DeliveryState,
  eventTypeForMove,
  type WebhookAttempt,
  type WebhookEventBody,
  type WebhookEventRecord,
  type WebhookEventType,
} from "./events.ts";
export {
  attemptDelivery,
  handleWebhookMessage,
  parseRetryAfter,
  retryDelay,
} from "./deliver.ts";
export {
  derivedSecret,
  getWebhookSecret,
  rotateWebhookSecret,
  ROTATION_OVERLAP_MS,
  signingSecrets,
  type WebhookSecretView,
} from "./secrets.ts";
export {
  type DeliveryPage,
  type DeliveryView,
  getDelivery,
  listDeliveries,
  type ListDeliveriesOptions,
  retryDelivery,
  type RetryResult,
} from "./store.ts";
export { generateSecret, signatureHeaders, signOne } from "./sign.ts";

/**
 * Registers the webhook session hook and the `webhook` queue handler on `deps`.
 * Throws `ConfigError` when `WEBHOOK_SECRET` is set but not a usable secret.
 */
export function startWebhooks(deps: AppDeps): void {
  const envSecret = deps.config.webhookSecret;
  if (envSecret !== undefined) {
    let ok = false;
    try {
      ok = secretKey(envSecret).length >= MIN_SECRET_BYTES;
    } catch {
      ok = false;
    }
    if (!ok) {
      throw new ConfigError(
        `WEBHOOK_SECRET must be whsec_ followed by base64 of at least ${MIN_SECRET_BYTES} bytes`,
      );
    }
  }
  deps.sessionHooks.inCommit.push((op, before, after) => {
    addEventToCommit(deps, op, before, after);
  });
  registerQueueHandler(
    deps,
    "webhook",
    (msg) => handleWebhookMessage(deps, msg),
  );
}
