/**
 * `deno task demo`: the whole service on one machine in one command, for a first look.
 * Starts the example conversation engine (scripts/example_engine.ts) on
 * wss://localhost:8787 and the service (main.ts) as a subprocess on
 * http://localhost:8000, prints the console's Try it page and the admin key to sign in
 * with, and stops both on Ctrl-C (SIGINT) or SIGTERM.
 *
 * The engine serves TLS with tests/fixtures/tls/localhost.crt/.key and the service
 * trusts it through DENO_CERT=tests/fixtures/tls/ca.crt: TEST-ONLY certificates (the
 * CA's key is public knowledge in this repository), fine for a loopback demo, never
 * for anything reachable from elsewhere.
 *
 * Env: PORT (8000), ENGINE_PORT (8787), ADMIN_API_KEY (random when unset), KV_PATH
 * (data/demo.sqlite). Everything else the service reads is passed through.
 */
import { ensureIslandsBuilt } from "../lib/console/bundle.ts";
import { base64url } from "../lib/ids.ts";
import { type ExampleEngine, startExampleEngine } from "./example_engine.ts";

const ROOT = new URL("../", import.meta.url);
const TLS = new URL("tests/fixtures/tls/", ROOT);
/** How long the service may take to answer /healthz after it was started. */
const START_WAIT_MS = 60_000;
/** How long a stopping service gets before it is killed. */
const STOP_WAIT_MS = 15_000;

function randomSecret(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function port(name: string, def: number): number {
  const raw = Deno.env.get(name);
  const n = raw ? Number(raw) : def;
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    console.error(`${name} must be a port number (1..65535)`);
    Deno.exit(2);
  }
  return n;
}

/** Waits until `url` answers 200, the child exits, or the time is up. */
async function waitHealthy(
  url: string,
  exited: Promise<Deno.CommandStatus>,
): Promise<boolean> {
  let done = false;
  void exited.then(() => done = true);
  const until = Date.now() + START_WAIT_MS;
  while (!done && Date.now() < until) {
    try {
      const res = await fetch(url);
      await res.body?.cancel();
      if (res.ok) return true;
    } catch {
      // Not listening yet.
    }
    await new Promise((ok) => setTimeout(ok, 250));
  }
  return false;
}

async function main(): Promise<number> {
  const servicePort = port("PORT", 8000);
  const enginePort = port("ENGINE_PORT", 8787);
  const adminKey = Deno.env.get("ADMIN_API_KEY") || `demo_${randomSecret(24)}`;
  const kvPath = Deno.env.get("KV_PATH") ||
    new URL("data/demo.sqlite", ROOT).pathname;

  console.log("Building the console's browser bundle…");
  await ensureIslandsBuilt();

  let engine: ExampleEngine;
  try {
    engine = startExampleEngine({
      port: enginePort,
      hostname: "127.0.0.1",
      cert: await Deno.readTextFile(new URL("localhost.crt", TLS)),
      key: await Deno.readTextFile(new URL("localhost.key", TLS)),
    });
  } catch (err) {
    console.error(
      `Could not start the example engine on port ${enginePort} (${
        err instanceof Error ? err.message : err
      }). Set ENGINE_PORT to a free port.`,
    );
    return 1;
  }
  const engineUrl = `wss://localhost:${engine.port}`;

  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-sys",
      new URL("main.ts", ROOT).pathname,
    ],
    cwd: ROOT.pathname,
    env: {
      PORT: String(servicePort),
      KV_PATH: kvPath,
      ADMIN_API_KEY: adminKey,
      TOKEN_SECRET: Deno.env.get("TOKEN_SECRET") || randomSecret(32),
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      DENO_CERT: new URL("ca.crt", TLS).pathname,
      TRY_ENGINE_URL: engineUrl,
    },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const exited = child.status;

  // Ctrl-C reaches the whole process group (the service too); forwarding it anyway
  // covers a signal sent to this process alone (the service's shutdown is idempotent).
  // A second signal kills the service at once.
  let stopping = false;
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(stopping ? "SIGKILL" : signal);
    } catch {
      // Already gone.
    }
    if (!stopping) {
      stopping = true;
      console.log("\nStopping the demo…");
      setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // Already gone.
        }
      }, STOP_WAIT_MS);
    }
  };
  const onInt = forward("SIGINT");
  const onTerm = forward("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);

  const base = `http://localhost:${servicePort}`;
  if (await waitHealthy(`${base}/healthz`, exited)) {
    console.log(
      [
        "",
        "Demo ready.",
        `  Try it:          ${base}/admin/try`,
        `  Sign in with:    ${adminKey}`,
        `  Example engine:  ${engineUrl} (filled in on the Try it page)`,
        "",
        "The engine uses the TEST-ONLY certificates in tests/fixtures/tls/: fine on",
        "loopback, never anywhere else. Press Ctrl-C to stop.",
        "",
      ].join("\n"),
    );
  } else if (!stopping) {
    console.error(
      `The service did not come up on ${base} (port in use? set PORT).`,
    );
    forward("SIGTERM")();
  }

  const status = await exited;
  Deno.removeSignalListener("SIGINT", onInt);
  Deno.removeSignalListener("SIGTERM", onTerm);
  await engine.close();
  console.log("Demo stopped.");
  // Stopped on request: clean when the service shut down by itself (not killed).
  if (stopping) return status.success ? 0 : 1;
  return status.code || 1;
}

if (import.meta.main) {
  Deno.exit(await main());
}
