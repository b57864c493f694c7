/**
 * `deno task pack [--out DIR]`: builds the client packages from client/ into npm
 * tarballs (default dist/packages/): ESM JavaScript and `.d.ts` from the same source by
 * the TypeScript compiler, a package.json (`exports`, `types`, `sideEffects: false`,
 * `engines`), the package's README (packages/<name>/README.md) and the licence
 * (packages/LICENSE), packed by `npm pack`. Versions are the API's (`API_VERSION`).
 *
 * - `@live-avatar/server`: the backend client (client/server.ts): Node ≥ 20, Deno, Bun.
 * - `@live-avatar/browser`: the player (client/browser.ts); its worklets travel inside
 *   it as source and load from Blob URLs, so nothing is copied into a page's files. It
 *   depends on `opus-decoder` (the WebAssembly Opus decoder of WebKit on Linux), which
 *   it imports dynamically: a bundler splits it off.
 * - `@live-avatar/react`: the hook and components (client/react/), on the player.
 *
 * The compiler and React's types come from npm once, into a cache of their own
 * (`$XDG_CACHE_HOME/live-avatar-pack`, else ~/.cache/…); nothing else is installed.
 */
import { API_VERSION } from "../lib/api/openapi.ts";
import { run } from "./_run.ts";
import config from "../deno.json" with { type: "json" };

const ROOT = new URL("../", import.meta.url).pathname;
/** `opus-decoder`'s version, as deno.json pins it. */
const OPUS_DECODER = config.imports["opus-decoder"].replace(
  /^npm:opus-decoder@/,
  "",
);

/** The build tools, pinned, and the browser package's dependency (for its types). */
export const TOOLCHAIN = {
  typescript: "5.9.3",
  "@types/react": "18.3.32",
  "opus-decoder": OPUS_DECODER,
} as const;

interface PackageSpec {
  name: string;
  /** Folder under packages/ (README) and the entry module under client/. */
  dir: string;
  entry: string;
  description: string;
  keywords: string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

export const PACKAGES: readonly PackageSpec[] = [
  {
    name: "@live-avatar/server",
    dir: "server",
    entry: "server.ts",
    description:
      "Backend client of the live avatar session service: create sessions, mint media tokens, end sessions (fetch only: Node 20+, Deno, Bun).",
    keywords: ["avatar", "live-avatar", "realtime", "server"],
  },
  {
    name: "@live-avatar/browser",
    dir: "browser",
    entry: "browser.ts",
    description:
      "Browser player of the live avatar session service: plays the avatar (WebCodecs, MSE or WebRTC) and sends the microphone.",
    keywords: ["avatar", "live-avatar", "webrtc", "webcodecs", "player"],
    dependencies: { "opus-decoder": OPUS_DECODER },
  },
  {
    name: "@live-avatar/react",
    dir: "react",
    entry: "react/mod.ts",
    description:
      "React hook and components for the live avatar session service's browser player.",
    keywords: ["avatar", "live-avatar", "react", "hook"],
    dependencies: { "@live-avatar/browser": API_VERSION },
    peerDependencies: { react: ">=18" },
  },
];

function cacheDir(): string {
  const base = Deno.env.get("XDG_CACHE_HOME") ??
    `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return `${base}/live-avatar-pack`;
}

async function installedVersion(dir: string, pkg: string): Promise<string> {
  try {
    const text = await Deno.readTextFile(
      `${dir}/node_modules/${pkg}/package.json`,
    );
    return (JSON.parse(text) as { version: string }).version;
  } catch {
    return "";
  }
}

/** The compiler and React's types at their pinned versions; returns their folder. */
export async function toolchain(): Promise<string> {
  const dir = cacheDir();
  const all = Object.entries(TOOLCHAIN);
  let missing = false;
  for (const [pkg, version] of all) {
    if (await installedVersion(dir, pkg) !== version) missing = true;
  }
  if (missing) {
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/package.json`,
      JSON.stringify({ private: true }),
    );
    // All of them: npm removes what the fresh package.json does not name.
    await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--save-exact",
      ...all.map(([pkg, version]) => `${pkg}@${version}`),
    ], { cwd: dir });
  }
  return dir;
}

function tsconfig(
  spec: PackageSpec,
  outDir: string,
  tools: string,
  built: Map<string, string>,
) {
  const paths: Record<string, string[]> = {
    react: [`${tools}/node_modules/@types/react/index.d.ts`],
    "opus-decoder": [`${tools}/node_modules/opus-decoder/types.d.ts`],
  };
  for (const [name, dir] of built) {
    const spec = PACKAGES.find((p) => p.name === name)!;
    paths[name] = [`${dir}/dist/${distEntry(spec, ".d.ts")}`];
  }
  return {
    compilerOptions: {
      target: "ES2022",
      module: "ESNext",
      moduleResolution: "Bundler",
      lib: ["ES2022", "DOM", "DOM.Iterable"],
      types: [],
      strict: true,
      declaration: true,
      allowImportingTsExtensions: true,
      rewriteRelativeImportExtensions: true,
      isolatedModules: true,
      noEmitOnError: true,
      skipLibCheck: true,
      rootDir: `${ROOT}client/${spec.entry.replace(/[^/]*$/, "")}`,
      outDir,
      paths,
    },
    files: [`${ROOT}client/${spec.entry}`],
  };
}

/** The entry's file name in dist/ with `ext` (the entry's folder is dist/ itself). */
function distEntry(spec: PackageSpec, ext: ".js" | ".d.ts"): string {
  return spec.entry.replace(/^.*\//, "").replace(/\.ts$/, ext);
}

function packageJson(spec: PackageSpec) {
  const js = `./dist/${distEntry(spec, ".js")}`;
  const dts = `./dist/${distEntry(spec, ".d.ts")}`;
  return {
    name: spec.name,
    version: API_VERSION,
    description: spec.description,
    license: "MIT",
    type: "module",
    sideEffects: false,
    engines: { node: ">=20" },
    exports: { ".": { types: dts, import: js, default: js } },
    main: js,
    types: dts,
    files: ["dist", "README.md", "LICENSE"],
    keywords: spec.keywords,
    ...(spec.dependencies ? { dependencies: spec.dependencies } : {}),
    ...(spec.peerDependencies
      ? { peerDependencies: spec.peerDependencies }
      : {}),
  };
}

/**
 * The compiler rewrites `./x.ts` imports to `./x.js` in the JavaScript only: the
 * declarations get the same, as every consumer's resolution expects.
 */
async function jsSpecifiersInDeclarations(dir: string): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) await jsSpecifiersInDeclarations(path);
    else if (e.name.endsWith(".d.ts")) {
      const text = await Deno.readTextFile(path);
      await Deno.writeTextFile(
        path,
        text.replace(
          /((?:from\s+|import\s*\(\s*)["']\.{1,2}\/[^"']*)\.ts(["'])/g,
          "$1.js$2",
        ),
      );
    }
  }
}

/** Builds and packs every package into `out`; returns the tarballs' paths by name. */
export async function pack(out: string): Promise<Map<string, string>> {
  const tools = await toolchain();
  const tsc = `${tools}/node_modules/typescript/bin/tsc`;
  await Deno.mkdir(out, { recursive: true });
  const build = await Deno.makeTempDir({ prefix: "live-avatar-pack-" });
  const built = new Map<string, string>();
  const tarballs = new Map<string, string>();
  try {
    for (const spec of PACKAGES) {
      const dir = `${build}/${spec.dir}`;
      await Deno.mkdir(dir, { recursive: true });
      const config = `${dir}/tsconfig.json`;
      await Deno.writeTextFile(
        config,
        JSON.stringify(tsconfig(spec, `${dir}/dist`, tools, built), null, 2),
      );
      await run("node", [tsc, "-p", config]);
      await Deno.remove(config);
      await jsSpecifiersInDeclarations(`${dir}/dist`);
      await Deno.writeTextFile(
        `${dir}/package.json`,
        JSON.stringify(packageJson(spec), null, 2) + "\n",
      );
      await Deno.copyFile(
        `${ROOT}packages/${spec.dir}/README.md`,
        `${dir}/README.md`,
      );
      await Deno.copyFile(`${ROOT}packages/LICENSE`, `${dir}/LICENSE`);
      const packed = await run("npm", [
        "pack",
        "--silent",
        "--pack-destination",
        out,
      ], { cwd: dir });
      tarballs.set(spec.name, `${out}/${packed.trim().split("\n").pop()}`);
      built.set(spec.name, dir);
    }
  } finally {
    await Deno.remove(build, { recursive: true });
  }
  return tarballs;
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  const out = i >= 0 ? Deno.args[i + 1] : `${ROOT}dist/packages`;
  for (const [name, file] of await pack(out)) console.log(`${name}  ${file}`);
}
