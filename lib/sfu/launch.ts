/**
 * Runs Janus (Debian's `janus` 1.1.x) as a separate process from the repository's own
 * config (`sfu/janus/*.jcfg`), filled into a private temp directory with fresh secrets
 * at every start: token auth, the Janus and Admin APIs on one address (loopback by
 * default), the streaming plugin with an `admin_key`, bounded port ranges, ICE on a
 * real interface. `deno task sfu` (scripts/sfu.ts) and the tests both start it here.
 */
import type { IceServer } from "../config.ts";

export interface JanusOptions {
  /** The Janus binary (`JANUS_BIN`); default `/usr/bin/janus`. */
  bin?: string;
  /** Janus's module folder holding `plugins/` and `transports/` (`JANUS_LIB_DIR`). */
  libDir?: string;
  /** Address the Janus and Admin APIs listen on; default 127.0.0.1. */
  bindIp?: string;
  /** Janus API port; 0 (default) picks a free one. */
  httpPort?: number;
  /** Admin API port; 0 (default) picks a free one. */
  adminPort?: number;
  /** The interface ICE candidates come from; default the first non-loopback IPv4 one. */
  iceInterface?: string;
  /** Ports toward browsers (ICE/DTLS/SRTP), `min-max`. */
  webrtcPortRange?: string;
  /** RTP ingest ports of the mountpoints, `min-max`. */
  ingestPortRange?: string;
  /** Public address for the host candidates when Janus sits behind a 1:1 NAT. */
  nat11?: string;
  /** A STUN server `host:port` Janus uses to learn its public address. */
  stunServer?: string;
  /** What browsers are handed as `ICE_SERVERS`; default none. */
  iceServers?: IceServer[];
  /** Janus's log level 0..7; default 3 (warnings). */
  debugLevel?: number;
  /** Where Janus's own log lines go; default kept in memory (see `RunningJanus.log`). */
  onLog?: (line: string) => void;
  /** Bound on start-up; default 15 s. */
  startTimeoutMs?: number;
  /** How a free port is found for `httpPort`/`adminPort` left 0 (tests replace it). */
  pickPort?: (hostname: string) => number;
}

export interface RunningJanus {
  /** The Janus API: the service's `SFU_URL`. */
  url: string;
  /** The Admin API (`/admin`); for operators and tests, never for the service. */
  adminUrl: string;
  /** The Janus API token the service uses: `SFU_API_SECRET`. */
  apiSecret: string;
  /** The streaming plugin's `admin_key`: `SFU_API_KEY`. */
  apiKey: string;
  adminSecret: string;
  iceServers: IceServer[];
  /** The service's variables, as `deno task sfu` prints them. */
  env: Record<
    "SFU_URL" | "SFU_API_SECRET" | "SFU_API_KEY" | "ICE_SERVERS",
    string
  >;
  pid: number;
  /** Janus's last log lines (for a failing test's message). */
  log: () => string[];
  /** Resolves with Janus's exit code when it exits. */
  exited: Promise<number>;
  /** Stops Janus (SIGTERM, then SIGKILL) and removes its config directory. */
  stop: () => Promise<void>;
}

const TEMPLATES = new URL("../../sfu/janus/", import.meta.url);
const CONFIG_FILES = [
  "janus.jcfg",
  "janus.transport.http.jcfg",
  "janus.plugin.streaming.jcfg",
];
const LIB_DIRS = [
  "/usr/lib/x86_64-linux-gnu/janus",
  "/usr/lib/aarch64-linux-gnu/janus",
  "/usr/lib/janus",
  "/opt/janus/lib/janus",
];

/** Thrown when Janus is missing or does not come up; the message says what to do. */
export class JanusLaunchError extends Error {
  /** Janus could not bind one of its ports (another process holds it). */
  readonly portTaken: boolean;

  constructor(message: string, portTaken = false) {
    super(message);
    this.name = "JanusLaunchError";
    this.portTaken = portTaken;
  }
}

/** Janus's words when a transport cannot bind its port. */
const PORT_TAKEN = /Couldn't start .*webserver on port/;
/**
 * Starts when the ports are ours to pick: a port probed free can be taken by another
 * process before Janus binds it (the test suite's parallel workers do), and Janus then
 * exits at start; it is started again on other ports.
 */
const PORT_ATTEMPTS = 3;

/** A random URL-safe secret of `bytes` random bytes. */
export function randomSecret(bytes = 24): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(
    /\//g,
    "_",
  ).replace(/=+$/, "");
}

/**
 * The interface ICE should use: the first non-loopback, non-link-local IPv4 one.
 * Janus 1.1 never offers loopback candidates, so there must be one.
 */
export function detectIceInterface(
  interfaces: Deno.NetworkInterfaceInfo[] = Deno.networkInterfaces(),
): string {
  const found = interfaces.find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.") &&
    !i.address.startsWith("169.254.") && i.name !== "lo"
  );
  if (!found) {
    throw new JanusLaunchError(
      "No non-loopback IPv4 interface found for Janus's ICE candidates (Janus never offers loopback ones); set SFU_ICE_INTERFACE",
    );
  }
  return found.name;
}

/** Fills `{{NAME}}` fields; an unknown field is a bug in the template. */
export function fillTemplate(
  text: string,
  values: Record<string, string>,
): string {
  return text.replace(/\{\{([A-Z0-9_]+)\}\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`no value for {{${name}}}`);
    if (/["\n\\]/.test(v)) throw new Error(`bad value for {{${name}}}`);
    return v;
  });
}

function freePort(hostname: string): number {
  const l = Deno.listen({ hostname, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

async function findModule(dir: string, prefix: string): Promise<string> {
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith(prefix)) return `${dir}/${e.name}`;
  }
  throw new JanusLaunchError(`${prefix} not found in ${dir}`);
}

async function findLibDir(given: string | undefined): Promise<string> {
  for (const dir of given ? [given] : LIB_DIRS) {
    if (await exists(`${dir}/plugins`)) return dir;
  }
  throw new JanusLaunchError(
    "Janus's plugins were not found (looked in " +
      (given ? given : LIB_DIRS.join(", ")) +
      "); install Debian's janus package or set JANUS_LIB_DIR",
  );
}

/** One Admin API call; resolves with Janus's JSON answer. */
export async function adminCall(
  adminUrl: string,
  adminSecret: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const res = await fetch(adminUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      ...body,
      transaction: crypto.randomUUID(),
      admin_secret: adminSecret,
    }),
    signal: signal ?? AbortSignal.timeout(5000),
  });
  return await res.json();
}

/**
 * Starts Janus and waits until its APIs answer and the service's token is added; on
 * ports it picked itself, again on other ports when one was taken meanwhile.
 */
export async function startJanus(
  options: JanusOptions = {},
): Promise<RunningJanus> {
  const bindIp = options.bindIp ?? "127.0.0.1";
  const pick = options.pickPort ?? freePort;
  for (let attempt = 1;; attempt++) {
    const ports = {
      http: options.httpPort || pick(bindIp),
      admin: options.adminPort || pick(bindIp),
    };
    try {
      return await launch(options, ports);
    } catch (err) {
      const ours = !options.httpPort || !options.adminPort;
      if (
        !ours || attempt >= PORT_ATTEMPTS ||
        !(err instanceof JanusLaunchError && err.portTaken)
      ) throw err;
    }
  }
}

/** One start of Janus on `ports`. */
async function launch(
  options: JanusOptions,
  ports: { http: number; admin: number },
): Promise<RunningJanus> {
  const bin = options.bin ?? "/usr/bin/janus";
  if (!await exists(bin)) {
    throw new JanusLaunchError(
      `Janus not found at ${bin}. Install it (Debian/Ubuntu: \`sudo apt-get install -y janus\`; .ci/run does this) or set JANUS_BIN`,
    );
  }
  const libDir = await findLibDir(options.libDir);
  const bindIp = options.bindIp ?? "127.0.0.1";
  const httpPort = ports.http, adminPort = ports.admin;
  const adminSecret = randomSecret();
  const apiSecret = randomSecret();
  const apiKey = randomSecret();
  const dir = await Deno.makeTempDir({ prefix: "avatar-janus-" });
  const natExtra = [
    options.nat11 ? `\tnat_1_1_mapping = "${options.nat11}"` : "",
    options.stunServer
      ? `\tstun_server = "${options.stunServer.split(":")[0]}"\n\tstun_port = ${
        Number(options.stunServer.split(":")[1] ?? 3478)
      }`
      : "",
  ].filter(Boolean).join("\n");
  const values: Record<string, string> = {
    CONFIG_DIR: dir,
    DEBUG_LEVEL: String(options.debugLevel ?? 3),
    ADMIN_SECRET: adminSecret,
    ADMIN_KEY: apiKey,
    WEBRTC_PORT_RANGE: options.webrtcPortRange ?? "20000-20999",
    INGEST_PORT_RANGE: options.ingestPortRange ?? "21000-21999",
    ICE_INTERFACE: options.iceInterface ?? detectIceInterface(),
    HTTP_PORT: String(httpPort),
    ADMIN_PORT: String(adminPort),
    BIND_IP: bindIp,
  };
  try {
    for (const name of CONFIG_FILES) {
      const text = await Deno.readTextFile(new URL(name, TEMPLATES));
      const filled = fillTemplate(
        text.replace("{{NAT_EXTRA}}", natExtra),
        values,
      );
      await Deno.writeTextFile(`${dir}/${name}`, filled, { mode: 0o600 });
    }
    for (const sub of ["plugins", "transports", "events", "loggers"]) {
      await Deno.mkdir(`${dir}/${sub}`);
    }
    // Only the streaming plugin and the HTTP transport are loaded.
    await Deno.symlink(
      await findModule(`${libDir}/plugins`, "libjanus_streaming.so"),
      `${dir}/plugins/libjanus_streaming.so`,
    );
    await Deno.symlink(
      await findModule(`${libDir}/transports`, "libjanus_http.so"),
      `${dir}/transports/libjanus_http.so`,
    );
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }

  const child = new Deno.Command(bin, {
    args: ["-C", `${dir}/janus.jcfg`, "-F", dir, "-o"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    if (lines.length > 200) lines.shift();
    options.onLog?.(line);
  };
  void pump(child.stdout, onLine);
  void pump(child.stderr, onLine);
  let dead = false;
  const exited = child.status.then((s) => {
    dead = true;
    return s.code;
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return await exited.then(() => {});
    stopped = true;
    if (!dead) {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const t = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, 3000);
      await exited;
      clearTimeout(t);
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };

  const host = bindIp.includes(":") ? `[${bindIp}]` : bindIp;
  const url = `http://${host}:${httpPort}/janus`;
  const adminUrl = `http://${host}:${adminPort}/admin`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 15_000);
  try {
    for (;;) {
      if (dead) {
        throw new JanusLaunchError(
          `Janus exited at start:\n${lines.slice(-20).join("\n")}`,
          lines.some((l) => PORT_TAKEN.test(l)),
        );
      }
      try {
        const answer = await adminCall(adminUrl, adminSecret, {
          janus: "add_token",
          token: apiSecret,
          plugins: ["janus.plugin.streaming"],
        }, AbortSignal.timeout(1000));
        if (answer.janus === "success") break;
        throw new JanusLaunchError(
          `Janus refused add_token: ${JSON.stringify(answer)}`,
        );
      } catch (err) {
        if (err instanceof JanusLaunchError) throw err;
        if (Date.now() > deadline) {
          throw new JanusLaunchError(
            `Janus did not answer on ${adminUrl} in time:\n${
              lines.slice(-20).join("\n")
            }`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const iceServers = options.iceServers ?? [];
  return {
    url,
    adminUrl,
    apiSecret,
    apiKey,
    adminSecret,
    iceServers,
    env: {
      SFU_URL: url,
      SFU_API_SECRET: apiSecret,
      SFU_API_KEY: apiKey,
      ICE_SERVERS: JSON.stringify(iceServers),
    },
    pid: child.pid,
    log: () => [...lines],
    exited,
    stop,
  };
}

async function pump(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let rest = "";
  const dec = new TextDecoder();
  try {
    for await (const chunk of stream) {
      rest += dec.decode(chunk, { stream: true });
      const parts = rest.split("\n");
      rest = parts.pop() ?? "";
      for (const p of parts) onLine(p);
    }
  } catch { /* the process went away */ }
  if (rest) onLine(rest);
}
