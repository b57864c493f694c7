/**
 * The renderer the app uses: the remote render worker when `RENDER_WORKER_URL` is set,
 * else the built-in renderer in this process.
 */
import type { AppDeps } from "../deps.ts";
import { type BuiltinOptions, createBuiltinRenderer } from "./builtin.ts";
import type { RenderBackend } from "../ports/render.ts";
import { RenderStartError } from "../ports/render.ts";
import { createRemoteRenderer } from "./remote.ts";

export * from "../ports/render.ts";

/**
 * Picks the render backend from `deps.config`: remote (`renderWorkerUrl` +
 * `renderWorkerToken`) or built-in. A worker URL without a token opens nothing: every
 * `open` rejects as misconfigured. The built-in renderer stops its sessions on
 * `deps.onClose`.
 */
export function createRenderBackend(
  deps: Pick<AppDeps, "config" | "log" | "onClose" | "metrics">,
  builtin: BuiltinOptions = {},
): RenderBackend {
  const { renderWorkerUrl, renderWorkerToken, startTimeoutMs } = deps.config;
  if (renderWorkerUrl) {
    if (!renderWorkerToken) {
      deps.log.error("RENDER_WORKER_URL is set without RENDER_WORKER_TOKEN");
      return {
        open: () =>
          Promise.reject(
            new RenderStartError(
              "misconfigured",
              "render worker token missing",
            ),
          ),
      };
    }
    return createRemoteRenderer(deps, {
      url: renderWorkerUrl,
      token: renderWorkerToken,
      startTimeoutMs,
    });
  }
  return createBuiltinRenderer(deps, {
    clockStamp: deps.config.renderClockStamp,
    onAudioLatency: (ms) => deps.metrics.renderLatency.observe(ms / 1000),
    onFrame: (painted) =>
      deps.metrics.renderFrames.inc({
        picture: painted ? "painted" : "repeated",
      }),
    ...builtin,
  });
}
