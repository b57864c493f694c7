/**
 * Starts the app's long-lived services on `deps` (the credential vault, rate limiter,
 * media hub, reaper, webhook delivery, SFU mountpoint sweep) and registers their shutdown in `deps.onClose`.
 */
import type { AppDeps } from "./deps.ts";
import { startRateLimiter } from "./api/rate_limit.ts";
import { initAuth } from "./auth/authenticate.ts";
import { startQueue } from "./kv/queue.ts";
import { startWebhooks } from "./webhooks/index.ts";
import { startMediaPlane } from "./media/service.ts";
import { startSfu } from "./media/sfu_sweep.ts";

export async function initServices(deps: AppDeps): Promise<void> {
  // Registered first so it runs last: credentials are zeroed after every service stops.
  deps.onClose.push(() => deps.vault.zeroAll());
  if (deps.config.tokenSecretGenerated) {
    deps.log.warn(
      "TOKEN_SECRET is not set: using a random per-process secret; media tokens die with this process",
    );
  }
  startRateLimiter(deps);
  initAuth(deps);
  startWebhooks(deps);
  startMediaPlane(deps);
  startSfu(deps);
  // Last: every queue handler is registered before messages start to flow.
  startQueue(deps);
  await Promise.resolve();
}
