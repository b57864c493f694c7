/**
 * `deno task sfu`: runs Janus in the foreground from the repository's config
 * (sfu/janus/*.jcfg) with fresh secrets, prints the service's SFU variables as
 * `KEY=value` lines, then `sfu ready`. Janus's own log goes to stderr. Ctrl-C stops it.
 *
 * Options (environment): `SFU_BIND` (API address, default 127.0.0.1), `SFU_HTTP_PORT`
 * (8088), `SFU_ADMIN_PORT` (7088), `SFU_ICE_INTERFACE` (default: the first non-loopback
 * interface), `SFU_WEBRTC_PORTS` (20000-20999), `SFU_INGEST_PORTS` (21000-21999),
 * `SFU_NAT_1_1` (public IP behind a 1:1 NAT), `SFU_STUN_SERVER` (host:port),
 * `SFU_ICE_SERVERS` (JSON, printed as ICE_SERVERS), `SFU_DEBUG_LEVEL` (3),
 * `JANUS_BIN`, `JANUS_LIB_DIR`.
 */
import type { IceServer } from "../lib/config.ts";
import { JanusLaunchError, startJanus } from "../lib/sfu/mod.ts";

const env = (name: string) => Deno.env.get(name) || undefined;
const port = (name: string, def: number) => {
  const n = Number(env(name) ?? def);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`${name} must be a port number`);
    Deno.exit(2);
  }
  return n;
};

let iceServers: IceServer[] = [];
const rawIce = env("SFU_ICE_SERVERS");
if (rawIce) {
  try {
    iceServers = JSON.parse(rawIce);
  } catch {
    console.error("SFU_ICE_SERVERS must be a JSON array of ICE servers");
    Deno.exit(2);
  }
}

const enc = new TextEncoder();
let janus;
try {
  janus = await startJanus({
    bin: env("JANUS_BIN"),
    libDir: env("JANUS_LIB_DIR"),
    bindIp: env("SFU_BIND"),
    httpPort: port("SFU_HTTP_PORT", 8088),
    adminPort: port("SFU_ADMIN_PORT", 7088),
    iceInterface: env("SFU_ICE_INTERFACE"),
    webrtcPortRange: env("SFU_WEBRTC_PORTS"),
    ingestPortRange: env("SFU_INGEST_PORTS"),
    nat11: env("SFU_NAT_1_1"),
    stunServer: env("SFU_STUN_SERVER"),
    iceServers,
    debugLevel: Number(env("SFU_DEBUG_LEVEL") ?? 3),
    onLog: (line) => Deno.stderr.writeSync(enc.encode(`janus: ${line}\n`)),
  });
} catch (err) {
  if (err instanceof JanusLaunchError) {
    console.error(err.message);
    Deno.exit(1);
  }
  throw err;
}

for (const [k, v] of Object.entries(janus.env)) console.log(`${k}=${v}`);
console.log("sfu ready");

const shutdown = async () => {
  await janus.stop();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", shutdown);
Deno.addSignalListener("SIGTERM", shutdown);
const code = await janus.exited;
await janus.stop();
console.error(`janus exited with code ${code}`);
Deno.exit(code === 0 ? 0 : 1);
