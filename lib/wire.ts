/**
 * The composition root: builds the object graph (`AppDeps`, lib/deps.ts) from the config
 * and closes it. The one lib module that picks adapters (the Janus SFU, KV handles, where
 * sessions start), so the modules that use them name only their ports. `app.ts` and the scripts call it;
 * tests build the same graph on `:memory:` KV with their own clock.
 */
import { AppMetrics } from "./metrics/registry.ts";
import type { AppDeps, DepsOptions, SessionHooks } from "./deps.ts";
import { loadConfig } from "./config.ts";
import { createLogger } from "./log.ts";
import { idleRuntime } from "./runtime.ts";
import { openKv, openReadKv } from "./kv/store.ts";
import { meteredKv } from "./kv/metered.ts";
import { CredentialVault } from "./vault.ts";
import { RenderSlots } from "./ports/slots.ts";
import { createJanusSfu, sfuIdentity } from "./sfu/mod.ts";
import { handOffCreate } from "./nodes/handoff.ts";
import { closePhotoWorker } from "./photo/worker.ts";
import { countSessions } from "./sessions/metrics.ts";
import { zeroViewerSeries } from "./media/viewer_stats.ts";

/** Builds the shared dependencies; the caller owns `closeDeps()`. */
export async function createDeps(options: DepsOptions = {}): Promise<AppDeps> {
  const config = options.config ?? loadConfig(options.env ?? {});
  const metrics = new AppMetrics();
  zeroViewerSeries(metrics);
  // Every KV operation counted and timed (its metrics and the sizing figures).
  const rawKv = options.kv ?? await openKv(config.kvPath);
  const rawReadKv = options.kv ? rawKv : await openReadKv(config.kvPath, rawKv);
  const kv = meteredKv(rawKv, metrics);
  const readKv = rawReadKv === rawKv ? kv : meteredKv(rawReadKv, metrics);
  const now = options.now ?? Date.now;
  const log = options.log ?? createLogger(undefined, now);
  const renderSlots = new RenderSlots(config.renderMaxSessions, {
    reservationMs: config.renderReservationS * 1000,
    now,
  });
  metrics.sample(() => {
    const used = renderSlots.inUse;
    metrics.renderSlots.set({ state: "used" }, used);
    metrics.renderSlots.set(
      { state: "free" },
      Math.max(0, renderSlots.max - used),
    );
  });
  const sessionHooks: SessionHooks = { inCommit: [], afterCommit: [] };
  countSessions({ metrics, sessionHooks, config });
  return {
    config,
    kv,
    readKv,
    now,
    log,
    metrics,
    // The photo preparation worker keeps a process alive: it ends with the app.
    onClose: [closePhotoWorker],
    instanceId: crypto.randomUUID(),
    instanceUrl: config.instanceUrl,
    sessionHooks,
    runtime: idleRuntime,
    vault: new CredentialVault(),
    draining: false,
    renderSlots,
    // A control plane drives no SFU: its media nodes do (lib/nodes/).
    sfu: options.sfu !== undefined
      ? options.sfu
      : config.sfu && config.role !== "control"
      ? createJanusSfu({
        url: config.sfu.url,
        token: config.sfu.apiSecret,
        adminKey: config.sfu.apiKey,
      })
      : null,
    sfuId: config.sfu ? await sfuIdentity(config.sfu) : null,
    // A control plane starts no session itself: each create goes to a media node.
    handOff: config.role === "control" ? handOffCreate : null,
  };
}

/** Runs every close hook (newest first) and closes KV when `closeKv` is set. */
export async function closeDeps(deps: AppDeps, closeKv = true): Promise<void> {
  for (const hook of deps.onClose.splice(0).reverse()) {
    try {
      await hook();
    } catch (err) {
      deps.log.error("close hook failed", { err });
    }
  }
  if (closeKv) {
    if (deps.readKv !== deps.kv) deps.readKv.close();
    deps.kv.close();
  }
}
