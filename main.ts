/** Wires the service: config → KV → app → `Deno.serve`. Nothing else happens here. */
import { createApp } from "./app.ts";
import {
  type Config,
  ConfigError,
  DEFAULT_DOCS_BASE_URL,
  loadConfig,
} from "./lib/config.ts";
import { bundleMissing } from "./lib/console/bundle.ts";
import {
  bufferedStdoutSink,
  createLogger,
  installLastResortHandlers,
} from "./lib/log.ts";
import { announceInstance } from "./lib/media/presence.ts";
import { RequestTracker, shutdownOnSignal } from "./lib/nodes/shutdown.ts";

let config: Config;
try {
  config = loadConfig(Deno.env.toObject());
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`configuration error: ${err.message}`);
    Deno.exit(2);
  }
  throw err;
}
const missing = await bundleMissing();
if (missing) {
  console.error(missing);
  Deno.exit(1);
}
const sink = bufferedStdoutSink();
const log = createLogger(sink);
// Last resort: a stray rejection or throw is logged (redacted), never allowed to end
// every live session.
installLastResortHandlers(log);
const app = await createApp({ config, log });
/** Aborted to close the server at shutdown, once its requests had their time. */
const serverAbort = new AbortController();
const requests = new RequestTracker();
let server: Deno.HttpServer;
try {
  server = serve();
} catch (err) {
  // Before the last-resort handlers could swallow it: a service that cannot listen
  // must not live on serving nothing.
  console.error(
    `cannot listen on port ${config.port}${
      config.host === "0.0.0.0" ? "" : ` of ${config.host}`
    }: ${err instanceof Error ? err.message : String(err)}`,
  );
  await app.close();
  sink.flush();
  Deno.exit(1);
}

/** The address of this host that reaches a server listening on `hostname`. */
function localHost(hostname: string): string {
  return hostname === "0.0.0.0"
    ? "127.0.0.1"
    : hostname === "::"
    ? "::1"
    : hostname;
}

/** An address as a URL's host: an IPv6 literal in brackets. */
function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

function serve(): Deno.HttpServer {
  return Deno.serve({
    hostname: config.host,
    port: config.port,
    signal: serverAbort.signal,
    onListen: ({ hostname, port }) => {
      // Peers on this machine reach it here unless INSTANCE_URL says otherwise.
      app.deps.instanceUrl ??= `http://${urlHost(localHost(hostname))}:${port}`;
      void announceInstance(app.deps);
      const host = hostname === "0.0.0.0" || hostname === "::"
        ? "localhost"
        : urlHost(hostname);
      const base = `http://${host}:${port}`;
      console.log(`avatar session service listening on ${base}`);
      console.log(`  REST API:       ${base}/v1/   (reference: ${base}/docs)`);
      console.log(`  admin console:  ${base}/admin`);
      if (config.role === "control") {
        console.log(
          "  role: control plane (SERVICE_ROLE=control): creates are handed to the media nodes registered in KV, media sockets relayed to them",
        );
        if (!config.publicUrl) {
          console.log(
            `  PUBLIC_URL is unset: the media socket URLs handed to browsers point at ${app.deps.instanceUrl}; set it to this control plane's public origin`,
          );
        }
      } else if (config.role === "media") {
        console.log(
          `  role: media node (SERVICE_ROLE=media), registered at ${app.deps.instanceUrl}: takes sessions from the control plane`,
        );
      }
      if (config.docsBaseIsDefault) {
        console.log(
          `  error doc links: doc_url points at the documented default ${DEFAULT_DOCS_BASE_URL}; set DOCS_BASE_URL, or an https PUBLIC_URL, to point it at this service's /docs`,
        );
      }
      if (Deno.env.get("OTEL_DENO") === "true") {
        // Deno's own HTTP spans record url.full and url.query: a media socket's
        // token, a webhook URL's query. The service cannot edit those spans.
        log.warn(
          "traces on (OTEL_DENO=true): Deno's own HTTP spans carry url.full and url.query, which hold media tokens; delete those attributes in your collector (docs/monitoring.md#traces)",
        );
      }
      if (!config.adminApiKey) {
        console.log(
          "  first admin credential: mint one with `npx --yes deno@2.9.6 task keys create --tenant admin --scopes keys:admin,sessions:read,sessions:write`, or set ADMIN_API_KEY",
        );
      }
    },
  }, requests.wrap(app.handler));
}

/** Every step bounded; a second signal exits at once (lib/nodes/shutdown.ts). */
const shutdown = shutdownOnSignal({
  deps: app.deps,
  server,
  requests,
  abortServer: () => serverAbort.abort(),
  close: () => app.close(),
  exit: (code) => {
    sink.flush();
    Deno.exit(code);
  },
});
try {
  Deno.addSignalListener("SIGINT", () => shutdown("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => shutdown("SIGTERM"));
} catch (err) {
  // A host without OS signals (a Deno Deploy isolate) stops the process itself; the
  // service keeps nothing there that a stop without this cleanup would lose.
  log.info("no signal handlers on this host", {
    err: err instanceof Error ? err.message : String(err),
  });
}
