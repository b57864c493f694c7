/**
 * Starts the media plane on an app's deps: the hub (the app's `SessionRuntime`), the
 * instance heartbeat and the reaper. A control plane (`SERVICE_ROLE=control`) holds no
 * session: its hub only relays sockets and asks holders to end, and it runs neither
 * heartbeat nor reaper (its isolates may live no longer than a request; the media
 * nodes reap).
 */
import type { AppDeps } from "../deps.ts";
import { loadPhotoAvatar } from "../photo/mod.ts";
import { engineFactoryFor } from "../providers/registry.ts";
import { createRenderBackend } from "../render/mod.ts";
import { photoPainters, type ThreadPainters } from "../render/photo/mod.ts";
import { PaintPool } from "../render/paint_pool/pool.ts";
import { MediaHub } from "./hub.ts";
import { startHeartbeat } from "./presence.ts";
import { startReaper } from "./reaper.ts";

const hubs = new WeakMap<AppDeps, MediaHub>();

/** The media hub of `deps` (started by `startMediaPlane`). */
export function mediaHubOf(deps: AppDeps): MediaHub {
  const hub = hubs.get(deps);
  if (!hub) throw new Error("media plane not started");
  return hub;
}

/**
 * The paint pool of `deps` as the photo painters take it (closed with the app), or
 * undefined with `PAINT_WORKERS=0`.
 */
function paintPoolOf(deps: AppDeps): ThreadPainters | undefined {
  if (deps.config.paintWorkers === 0) return undefined;
  const pool = new PaintPool({ log: deps.log, size: deps.config.paintWorkers });
  deps.onClose.push(() => pool.close());
  return (avatar, bgId, seed) => pool.open(avatar, bgId, seed);
}

/** Starts the hub, heartbeat and reaper; everything stops on `deps.onClose`. */
export function startMediaPlane(deps: AppDeps): MediaHub {
  const hub = new MediaHub(deps, {
    engineFactoryFor: (type) => engineFactoryFor(deps, type),
    // Tenants' photo avatars are painted in this process, on the paint pool's
    // threads (PAINT_WORKERS), read from KV once per instance (DECISIONS 12); the
    // catalog's ids open the cartoon.
    render: createRenderBackend(deps, {
      painters: photoPainters(
        (tenant, id) => loadPhotoAvatar(deps.kv, tenant, id),
        paintPoolOf(deps),
      ),
    }),
  });
  hubs.set(deps, hub);
  deps.runtime = hub;
  hub.start();
  if (deps.config.role !== "control") {
    startHeartbeat(deps);
    startReaper(deps);
  }
  deps.onClose.push(() => hub.close());
  return hub;
}
