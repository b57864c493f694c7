/**
 * Everything the app's routes and services share, built once per app instance. `main.ts`
 * builds it from the environment; tests build it on `:memory:` KV with their own clock.
 */
import { type Config, loadConfig } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { openKv } from "./store.ts";

export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
  /** The clock (epoch ms). Tests inject their own. */
  now: () => number;
  log: Logger;
  /** Runs when the app closes, last registered first. */
  onClose: Array<() => void | Promise<void>>;
}

export interface DepsOptions {
  env?: Record<string, string | undefined>;
  config?: Config;
  kv?: Deno.Kv;
  now?: () => number;
  log?: Logger;
}

/** Builds the shared dependencies; the caller owns `close()`. */
export async function createDeps(options: DepsOptions = {}): Promise<AppDeps> {
  const config = options.config ?? loadConfig(options.env ?? {});
  const kv = options.kv ?? await openKv(config.kvPath);
  const now = options.now ?? Date.now;
  const log = options.log ?? createLogger(undefined, now);
  return { config, kv, now, log, onClose: [] };
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
  if (closeKv) deps.kv.close();
}
