/**
 * The end of a live session's pipeline (lib/media/live.ts `teardown`): the engine asked
 * to end, the renderer to finish its fragment, the SFU viewer closed, all at once.
 */
import type { EngineConnection } from "../ports/providers.ts";
import type { RenderSession } from "../ports/render.ts";
import type { SfuLink } from "./sfu_signalling.ts";

/**
 * Ends the engine (gracefully unless `force`) and stops the renderer, each within
 * `timeoutMs`, and closes the SFU viewer. Resolves with what did not finish in time
 * (empty when all did).
 */
export async function stopPipeline(
  parts: {
    engine: EngineConnection | null;
    render: RenderSession | null;
    sfu: SfuLink | null;
  },
  force: boolean,
  timeoutMs: number,
): Promise<string[]> {
  const { engine, render, sfu } = parts;
  const problems: string[] = [];
  const seconds = Math.round(timeoutMs / 1000);
  const engineDone = (async () => {
    if (!engine) return;
    if (force) {
      engine.close();
      return;
    }
    const ok = await engine.end(timeoutMs).catch(() => false);
    if (!ok) {
      problems.push(`conversation engine did not close within ${seconds} s`);
      engine.close();
    }
  })();
  const renderDone = (async () => {
    if (!render) return;
    const { clean } = await render.stop({ graceful: !force, timeoutMs })
      .catch(() => ({ clean: false }));
    if (!clean && !force) {
      problems.push(`renderer did not stop within ${seconds} s`);
    }
  })();
  await Promise.all([engineDone, renderDone, sfu?.close()]);
  return problems;
}
