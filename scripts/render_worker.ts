/**
 * A render worker: serves the built-in renderer over the protocol of docs/render-worker.md.
 * `PORT` (default 8090), `RENDER_WORKER_TOKEN` (required), `HOSTNAME` (default 0.0.0.0).
 *
 *   RENDER_WORKER_TOKEN=… deno task render-worker
 */
import { createLogger } from "../lib/log.ts";
import { createBuiltinRenderer } from "../lib/render/builtin.ts";
import { createRenderWorker } from "../lib/render/worker.ts";

const log = createLogger();
const token = Deno.env.get("RENDER_WORKER_TOKEN") ?? "";
if (token.length < 16) {
  log.error("RENDER_WORKER_TOKEN must be set (at least 16 characters)");
  Deno.exit(1);
}
const onClose: Array<() => void | Promise<void>> = [];
const worker = createRenderWorker({
  backend: createBuiltinRenderer({ log, onClose }),
  token,
  log,
});
const server = Deno.serve({
  port: Number(Deno.env.get("PORT") ?? 8090),
  hostname: Deno.env.get("HOSTNAME") ?? "0.0.0.0",
  onListen: ({ hostname, port }) =>
    log.info("render worker listening", { hostname, port }),
}, worker.handler);

const shutdown = async () => {
  await worker.close();
  for (const hook of onClose.splice(0).reverse()) await hook();
  await server.shutdown();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", shutdown);
Deno.addSignalListener("SIGTERM", shutdown);
