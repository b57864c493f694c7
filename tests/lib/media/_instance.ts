/** A real service process (`main.ts`) on a KV file, for multi-instance tests. */
import { TEST_ADMIN_KEY, TEST_TOKEN_SECRET } from "../../_helpers.ts";
import { ensureIslandsBuilt } from "../../../lib/console/bundle.ts";

const ROOT = new URL("../../../", import.meta.url);

export interface Instance {
  base: string;
  child: Deno.ChildProcess;
  /** What the process wrote to stdout (its logs), when kept; complete after `stop`. */
  output(): string;
  stop(signal?: Deno.Signal): Promise<void>;
}

export interface InstanceOptions {
  /** Its `deno run` permission flags (default `-A`). */
  permissions?: string[];
  /** Keep its stdout for `output()` (otherwise drained and dropped). */
  keepOutput?: boolean;
  /** The module it runs (default `main.ts`; a fixture that imports it). */
  entry?: string;
}

/** Starts `main.ts` as its own process on `kvPath`, and waits until it listens. */
export async function startInstance(
  kvPath: string,
  env: Record<string, string> = {},
  options: InstanceOptions = {},
): Promise<Instance> {
  // main.ts refuses to start without the console bundle.
  await ensureIslandsBuilt();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(options.permissions ?? ["-A"]),
      options.entry ?? "main.ts",
    ],
    cwd: ROOT,
    env: {
      PORT: "0",
      KV_PATH: kvPath,
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      END_CLEANUP_TIMEOUT_MS: "2000",
      DENO_CERT: new URL("tests/fixtures/tls/ca.crt", ROOT).pathname,
      ...env,
    },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let base = "";
  while (!base) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`instance exited before listening: ${seen}`);
    seen += value;
    base = seen.match(/listening on (http:\/\/\S+)/)?.[1] ?? "";
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  const drain = (async () => {
    try {
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        if (options.keepOutput) seen += r.value;
      }
    } catch { /* closed */ }
  })();
  let stopped = false;
  return {
    base,
    child,
    output: () => seen,
    async stop(signal: Deno.Signal = "SIGTERM") {
      if (!stopped) {
        stopped = true;
        try {
          child.kill(signal);
        } catch { /* already gone */ }
      }
      await child.status;
      await drain;
    },
  };
}
