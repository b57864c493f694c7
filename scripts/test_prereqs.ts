/**
 * What the test suite needs from outside npm, run first by `deno task test`: Chromium
 * (the browser tests drive `/usr/bin/chromium`), Janus (the SFU tests run
 * `/usr/bin/janus` from their own config), espeak-ng (the lip-sync test rebuilds the
 * viseme profiles through its library), Prometheus' promtool (the operator's alert
 * rules and dashboard, tests/ops/), and the rest of the browser matrix
 * (tests/e2e/matrix_*_test.ts): Firefox ESR, WebKitGTK's WebDriver and MiniBrowser on
 * an Xvfb display with GStreamer's decoders, each browser playing to a PulseAudio null
 * sink that the test records. Everything present: returns at once, no
 * package manager call. Something missing, as root with apt-get (a fresh Debian
 * machine, CI): `apt-get update` once, then `apt-get install -y` of the missing Debian
 * packages, quietly, with the packages' own system services (janus, prometheus) kept
 * from starting and janus's disabled. Otherwise it stops with one sentence saying what to install.
 *
 * `PREREQS_ROOT` (for this script's own tests) prefixes every path it looks at.
 */

/** A tool the tests run, and the Debian package that ships it. */
export interface Prereq {
  path: string;
  pkg: string;
  name: string;
}

export const PREREQS: readonly Prereq[] = [
  { path: "/usr/bin/chromium", pkg: "chromium", name: "Chromium" },
  { path: "/usr/bin/janus", pkg: "janus", name: "Janus" },
  // The lip-sync profile test rebuilds the profiles through libespeak-ng (a dependency).
  { path: "/usr/bin/espeak-ng", pkg: "espeak-ng", name: "espeak-ng" },
  // A real Prometheus scrapes the service; promtool checks the alert rules, the
  // dashboard's queries and /metrics (tests/ops/). Both ship in one package.
  {
    path: "/usr/bin/promtool",
    pkg: "prometheus",
    name: "Prometheus' promtool",
  },
  { path: "/usr/bin/firefox-esr", pkg: "firefox-esr", name: "Firefox ESR" },
  // WebKitWebDriver; MiniBrowser comes with libwebkit2gtk-4.1-0, its dependency.
  {
    path: "/usr/bin/WebKitWebDriver",
    pkg: "webkit2gtk-driver",
    name: "WebKitWebDriver",
  },
  { path: "/usr/bin/Xvfb", pkg: "xvfb", name: "Xvfb" },
  { path: "/usr/bin/pulseaudio", pkg: "pulseaudio", name: "PulseAudio" },
  { path: "/usr/bin/parec", pkg: "pulseaudio-utils", name: "parec" },
  // WebKitGTK's MSE decodes H.264 and AAC with libav and parses H.264 with h264parse.
  {
    path: "/usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstlibav.so",
    pkg: "gstreamer1.0-libav",
    name: "GStreamer's libav plugin",
  },
  {
    path: "/usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstvideoparsersbad.so",
    pkg: "gstreamer1.0-plugins-bad",
    name: "GStreamer's video parsers",
  },
];

export interface PrereqOptions {
  /** Prefix of every file looked at or written: "" on a real machine. */
  root?: string;
  /** The caller's uid (`Deno.uid()`); installing needs 0. */
  uid?: number | null;
  /** Where commands (`apt-get`, `systemctl`, `update-rc.d`) are looked up: a PATH. */
  path?: string;
  prereqs?: readonly Prereq[];
  log?: (line: string) => void;
}

/** Why the tests cannot get what they need; `message` is one sentence for the user. */
export class PrereqError extends Error {
  constructor(message: string, readonly detail = "") {
    super(message);
    this.name = "PrereqError";
  }
}

async function exists(file: string): Promise<boolean> {
  return await Deno.stat(file).then(() => true, () => false);
}

async function which(cmd: string, path: string): Promise<string | null> {
  for (const dir of path.split(":")) {
    if (dir && await exists(`${dir}/${cmd}`)) return `${dir}/${cmd}`;
  }
  return null;
}

async function run(
  cmd: string,
  args: string[],
): Promise<{ ok: boolean; output: string }> {
  const out = await new Deno.Command(cmd, {
    args,
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  return { ok: out.success, output: text };
}

function listed(items: readonly Prereq[]): string {
  const named = items.map((p) => `${p.name} (${p.path})`);
  return named.length < 3
    ? named.join(" and ")
    : `${named.slice(0, -1).join(", ")} and ${named.at(-1)}`;
}

/**
 * Makes sure every prerequisite is installed. Returns the Debian packages it installed
 * (none when all were present); throws `PrereqError` when it cannot install them.
 */
export async function ensurePrereqs(
  options: PrereqOptions = {},
): Promise<string[]> {
  const root = options.root ?? "";
  const prereqs = options.prereqs ?? PREREQS;
  const path = options.path ?? Deno.env.get("PATH") ?? "";
  const log = options.log ?? ((line: string) => console.log(line));
  const missing: Prereq[] = [];
  for (const p of prereqs) {
    if (!await exists(root + p.path)) missing.push(p);
  }
  if (missing.length === 0) return [];
  const pkgs = missing.map((p) => p.pkg);
  const howto = `\`sudo apt-get install -y ${pkgs.join(" ")}\``;
  const aptGet = await which("apt-get", path);
  if (!aptGet) {
    throw new PrereqError(
      `The tests need ${
        listed(missing)
      }, and this machine has no apt-get to install them: install them with your package manager (on Debian/Ubuntu, ${howto}) and run the tests again.`,
    );
  }
  if ((options.uid === undefined ? Deno.uid() : options.uid) !== 0) {
    throw new PrereqError(
      `The tests need ${
        listed(missing)
      }: install them (${howto}) and run the tests again.`,
    );
  }
  log(
    `installing ${pkgs.join(" ")} from Debian for the tests (apt-get, once)`,
  );
  // Keep the janus package's own system service (and any other) from starting: the
  // tests run Janus from their own config. invoke-rc.d and deb-systemd-invoke obey it.
  const policy = `${root}/usr/sbin/policy-rc.d`;
  const ownPolicy = !await exists(policy);
  if (ownPolicy) {
    await Deno.mkdir(`${root}/usr/sbin`, { recursive: true });
    await Deno.writeTextFile(policy, "#!/bin/sh\nexit 101\n", { mode: 0o755 });
  }
  try {
    const update = await run(aptGet, ["update", "-qq"]);
    const install = update.ok
      ? await run(aptGet, ["install", "-y", "-qq", ...pkgs])
      : update;
    if (!install.ok) {
      throw new PrereqError(
        `Installing ${
          pkgs.join(" ")
        } with apt-get failed (output below): install them (${howto}) and run the tests again.`,
        install.output,
      );
    }
  } finally {
    if (ownPolicy) await Deno.remove(policy).catch(() => {});
  }
  if (pkgs.includes("janus")) await disableJanusService(root, path);
  const still = [];
  for (const p of missing) if (!await exists(root + p.path)) still.push(p);
  if (still.length > 0) {
    throw new PrereqError(
      `apt-get installed ${pkgs.join(" ")} but ${
        listed(still)
      } is still missing: install it so that path exists and run the tests again.`,
    );
  }
  return pkgs;
}

/** The package enables `janus.service` at boot; the tests never use it. */
async function disableJanusService(root: string, path: string): Promise<void> {
  const systemctl = await which("systemctl", path);
  if (systemctl && await exists(`${root}/run/systemd/system`)) {
    await run(systemctl, ["disable", "--now", "janus.service"]);
  }
  const updateRcD = await which("update-rc.d", path);
  if (updateRcD) await run(updateRcD, ["janus", "disable"]);
}

if (import.meta.main) {
  try {
    // PREREQS_ROOT: a throwaway root for this script's own tests ("" = the machine).
    const installed = await ensurePrereqs({
      root: Deno.env.get("PREREQS_ROOT") ?? "",
    });
    if (installed.length > 0) console.log(`installed ${installed.join(" ")}`);
  } catch (err) {
    if (!(err instanceof PrereqError)) throw err;
    console.error(err.message);
    if (err.detail) console.error(err.detail.trimEnd());
    Deno.exit(1);
  }
}
