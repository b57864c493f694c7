/**
 * Starts the app's long-lived services on `deps` (the credential vault, rate limiter,
 * media hub, reaper, webhook delivery) and registers their shutdown in `deps.onClose`.
 */
import type { AppDeps } from "./deps.ts";
import { startRateLimiter } from "./api/rate_limit.ts";
import { initAuth } from "./auth/authenticate.ts";
import { startQueue } from "./kv/queue.ts";
import { startWebhooks } from "./webhooks/index.ts";
import { startMediaPlane } from "./media/service.ts";

export async function initServices(deps: AppDeps): Promise<void> {
  // Registered first so it runs last: credentials are zeroed after every service stops.
  deps.onClose.push(() => deps.vault.zeroAll());
  if (deps.config.sfu) {
    deps.log.warn(
      "SFU_URL is set, but this service publishes no media to an SFU: transport webrtc_sfu is refused (AVTR_SFU_NOT_CONFIGURED) and auto uses websocket_fmp4",
    );
  }
  if (deps.config.tokenSecretGenerated) {
    deps.log.warn(
      "TOKEN_SECRET is not set: using a random per-process secret; media tokens die with this process",
    );
  }
  startRateLimiter(deps);
  initAuth(deps);
  startWebhooks(deps);
  startMediaPlane(deps);
  // Last: every queue handler is registered before messages start to flow.
  startQueue(deps);
  await Promise.resolve();
}
