/**
 * Builds the console's browser bundle: `deno bundle --code-splitting` (esbuild inside)
 * of lib/console/client.ts, which hydrates the islands, into static/build/client.js and
 * the chunks it imports beside it (the browser client's WebAssembly Opus decoder is one,
 * fetched only by WebKit on Linux playing WebCodecs, which the Try it page does not
 * ask for), and the microphone worklet of the browser client into
 * static/build/pcm-worklet.js. A stamp of the sources' hash makes repeated builds
 * (every test file, every start) free until a source changes; output is written to a
 * temporary folder and renamed, chunks before the entry that imports them, so
 * concurrent builders never leave a half-written bundle.
 *
 * Run as a script (`deno task build`, also Deno Deploy's build step) or call
 * `ensureIslandsBuilt()`; `bundleMissing()` tells `main.ts` whether it ran.
 */
import { createHash } from "node:crypto";
import { PCM_WORKLET_SOURCE } from "../../client/pcm-worklet.ts";

const ROOT = new URL("../../", import.meta.url);
const BUILD = new URL("static/build/", ROOT);
/** A chunk's name: esbuild's `[name]-[hash]`. */
const CHUNK = /^[A-Za-z0-9_]+-[A-Z0-9]{8}\.js$/;

/** Where the bundle is written (served at /static/build/client.js). */
export const BUNDLE_PATH = new URL("static/build/client.js", ROOT);
const STAMP_PATH = new URL("static/build/client.hash", ROOT);
const ENTRY = new URL("lib/console/client.ts", ROOT);
/** Where the microphone worklet is written (served at /static/build/pcm-worklet.js). */
export const WORKLET_PATH = new URL("static/build/pcm-worklet.js", ROOT);
/** Its URL, passed as the browser client's `workletUrl` (the CSP forbids blob: scripts). */
export const WORKLET_URL = "/static/build/pcm-worklet.js";
const SOURCES = [
  "islands/",
  "lib/console/",
  "components/",
  // The browser client (client/browser.ts), bundled by the TryIt island.
  "client/",
  "deno.json",
];

async function walk(url: URL, out: URL[]): Promise<void> {
  const info = await Deno.stat(url).catch(() => null);
  if (!info) return;
  if (info.isFile) {
    out.push(url);
    return;
  }
  const entries: Deno.DirEntry[] = [];
  for await (const e of Deno.readDir(url)) entries.push(e);
  entries.sort((a, b) => a.name < b.name ? -1 : 1);
  for (const e of entries) {
    await walk(new URL(e.name + (e.isDirectory ? "/" : ""), url), out);
  }
}

/** A hash of everything the bundle is built from. */
export async function sourcesHash(): Promise<string> {
  const files: URL[] = [];
  for (const s of SOURCES) await walk(new URL(s, ROOT), files);
  const h = createHash("sha256");
  h.update(Deno.version.deno);
  for (const f of files) {
    h.update(f.pathname.slice(ROOT.pathname.length));
    h.update(await Deno.readFile(f));
  }
  return h.digest("hex");
}

/**
 * Builds static/build/client.js unless it is already built from the current sources.
 * Returns true when it ran `deno bundle`. Throws with the bundler's output on failure.
 */
export async function ensureIslandsBuilt(
  options: { force?: boolean } = {},
): Promise<boolean> {
  const hash = await sourcesHash();
  if (!options.force) {
    const stamp = await Deno.readTextFile(STAMP_PATH).catch(() => "");
    const built = await Deno.stat(BUNDLE_PATH).then(() => true, () => false) &&
      await Deno.stat(WORKLET_PATH).then(() => true, () => false);
    if (built && stamp.trim() === hash) return false;
  }
  await Deno.mkdir(BUILD, { recursive: true });
  const suffix = `${Deno.pid}-${crypto.randomUUID().slice(0, 8)}.tmp`;
  const tmp = new URL(`.bundle-${suffix}/`, BUILD);
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "browser",
        "--minify",
        "--code-splitting",
        "--config",
        new URL("deno.json", ROOT).pathname,
        "--outdir",
        tmp.pathname,
        ENTRY.pathname,
      ],
      cwd: ROOT.pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const text = new TextDecoder().decode(out.stderr) +
        new TextDecoder().decode(out.stdout);
      throw new Error(`deno bundle failed:\n${text}`);
    }
    await placeBundle(tmp);
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  const workletTmp = new URL(`static/build/pcm-worklet.js.${suffix}`, ROOT);
  await Deno.writeTextFile(workletTmp, PCM_WORKLET_SOURCE);
  await Deno.rename(workletTmp, WORKLET_PATH);
  const stampTmp = new URL(`static/build/client.hash.${suffix}`, ROOT);
  await Deno.writeTextFile(stampTmp, hash + "\n");
  await Deno.rename(stampTmp, STAMP_PATH);
  return true;
}

/**
 * Moves a build from `dir` into static/build/: the chunks first (their names are their
 * contents' hashes, so a concurrent builder writes the same files), then client.js,
 * then chunks no longer imported are removed.
 */
async function placeBundle(dir: URL): Promise<void> {
  const chunks = new Set<string>();
  for await (const e of Deno.readDir(dir)) {
    if (e.name === "client.js") continue;
    if (!CHUNK.test(e.name)) {
      throw new Error(`unexpected bundle file ${e.name}`);
    }
    chunks.add(e.name);
    await Deno.rename(new URL(e.name, dir), new URL(e.name, BUILD));
  }
  await Deno.rename(new URL("client.js", dir), BUNDLE_PATH);
  for await (const e of Deno.readDir(BUILD)) {
    if (e.isFile && CHUNK.test(e.name) && !chunks.has(e.name)) {
      await Deno.remove(new URL(e.name, BUILD)).catch(() => {});
    }
  }
}

/**
 * Null when the built console files are present; else one line naming the missing
 * file and the build step. `main.ts` refuses to start on it rather than serve a
 * console without scripts (on Deno Deploy the build step is `deno task build`).
 */
export async function bundleMissing(): Promise<string | null> {
  for (const file of [BUNDLE_PATH, WORKLET_PATH]) {
    const found = await Deno.stat(file).then((i) => i.isFile, () => false);
    if (!found) {
      const rel = file.pathname.slice(ROOT.pathname.length);
      return `console bundle missing: ${rel} is not built; run \`deno task build\` before starting (\`deno task start\` does; on Deno Deploy make it the build command)`;
    }
  }
  return null;
}

if (import.meta.main) {
  const force = Deno.args.includes("--force");
  const built = await ensureIslandsBuilt({ force });
  console.log(
    built
      ? `built ${BUNDLE_PATH.pathname}`
      : `up to date: ${BUNDLE_PATH.pathname}`,
  );
}
