/**
 * The layers of the code, measured from its own imports: `deno run --allow-read
 * scripts/layers.ts` prints every import circle and every arrow that runs back up a
 * floor, each upward arrow with the reason written beside its import.
 *
 * Scope of the floors: main.ts, app.ts, manifest.ts, lib/, routes/, components/, islands/,
 * client/ (tests, bench, fuzz and scripts are callers of these, not part of the house);
 * circles are looked for among every module of the repository. Every
 * static `import`/`export … from` and literal dynamic `import()` of a relative path is
 * an arrow, type-only ones included: a type is knowledge of the module it comes from.
 *
 * Rooms: a folder of lib/ is one room (`lib/sessions`), a module directly in lib/ is
 * a room of its own (`lib/deps.ts`), and routes/, components/, islands/ and client/ are
 * one room each: a module stands in the folder of its floor (the ports `AppDeps` names
 * in lib/ports/, the one error class in lib/errors.ts), so folders drawn as rooms show
 * the same floors. Each room stands on a floor (FLOORS, top first). An arrow is upward
 * when it points from a room to a room on a higher floor; arrows within a floor are
 * fine (no circle may form between files, which is checked on its own). An upward
 * arrow stays allowed only with a comment `layers: <reason>` on the line above the
 * import: the reason is printed, and the count is bounded by tests/scripts/layers_test.ts.
 */

/**
 * Floors, top first. What stands higher may import what stands lower, never the
 * reverse:
 * - entry: the composition roots, which build the object graph and so know everything;
 * - routes: the URL tree and its manifest;
 * - console: the console's server components, islands and their helpers;
 * - topology: where a session runs (control plane, media nodes, hand-off, drain);
 * - media plane: the live side of a session, which drives engines, renderer and SFU;
 * - sessions: the session domain (create, end, records, usage), its webhooks, tenants;
 * - avatars: tenants' photo avatars (prepared at upload, stored, loaded by media nodes),
 *   which a create names and the renderer paints;
 * - adapters: what the media plane and the session domain drive: engine adapters, the
 *   renderer, the SFU, the avatar catalog;
 * - request edge: authentication over the HTTP layer (router, schemas, rate limits),
 *   which every domain answers through, and the token secret both derive keys from;
 * - shared types: `AppDeps`, the ports it names (lib/ports/: SFU, renderer, engines,
 *   and the render slots it carries), the runtime, the credential vault, and who is
 *   calling (lib/principal.ts);
 * - infrastructure: KV, config (the topology's part in lib/config_nodes.ts), log,
 *   ids, the network guard, the one error class;
 * - client: the customer libraries, which import nothing of the service.
 */
export const FLOORS: readonly { name: string; rooms: readonly string[] }[] = [
  {
    name: "entry",
    rooms: ["main.ts", "app.ts", "lib/wire.ts", "lib/services.ts"],
  },
  { name: "routes", rooms: ["manifest.ts", "routes"] },
  { name: "console", rooms: ["components", "islands", "lib/console"] },
  { name: "topology", rooms: ["lib/nodes"] },
  { name: "media plane", rooms: ["lib/media"] },
  {
    name: "sessions",
    rooms: [
      "lib/sessions",
      "lib/sessions.ts",
      "lib/webhooks",
      "lib/tenants.ts",
    ],
  },
  { name: "avatars", rooms: ["lib/photo"] },
  {
    name: "adapters",
    rooms: ["lib/providers", "lib/render", "lib/sfu", "lib/avatars.ts"],
  },
  {
    name: "request edge",
    rooms: ["lib/api", "lib/auth", "lib/token_secret.ts"],
  },
  {
    name: "shared types",
    rooms: [
      "lib/deps.ts",
      "lib/runtime.ts",
      "lib/vault.ts",
      "lib/ports",
      "lib/principal.ts",
    ],
  },
  {
    name: "infrastructure",
    rooms: [
      "lib/kv",
      "lib/metrics",
      "lib/config.ts",
      "lib/config_error.ts",
      "lib/config_nodes.ts",
      "lib/log.ts",
      "lib/ids.ts",
      "lib/net_guard.ts",
      "lib/errors.ts",
    ],
  },
  { name: "client", rooms: ["client"] },
];

/**
 * What the circle check covers beyond the house: every module of the repository, its
 * tests, fuzzers, benchmarks and scripts too (`.` less these folders).
 */
export const NOT_CODE = new Set([
  ".git",
  "node_modules",
  "data",
  "test-output",
  "static",
]);

/** The folders and top-level modules the graph covers. */
export const SCOPE = [
  "main.ts",
  "app.ts",
  "manifest.ts",
  "lib",
  "routes",
  "components",
  "islands",
  "client",
];

export interface Arrow {
  from: string;
  to: string;
  /** The comment `layers: …` on the line above the import, if any. */
  reason?: string;
}

/** The room a file path (relative to the root, `/`-separated) belongs to. */
export function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "lib") return parts.length > 2 ? `lib/${parts[1]}` : path;
  return parts.length > 1 ? parts[0] : path;
}

/** The floor of a room: 0 is the bottom. Throws for a room no floor names. */
export function floorOf(room: string): number {
  const i = FLOORS.findIndex((f) => f.rooms.includes(room));
  if (i < 0) throw new Error(`no floor for ${room}: add it to FLOORS`);
  return FLOORS.length - 1 - i;
}

const IMPORT_RE =
  /(?:^|\n)((?:[ \t]*\/\/[^\n]*\n)*)[ \t]*(?:import|export)\b[^"'`;]*?\bfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)|(?:^|\n)[ \t]*import\s*["']([^"']+)["']/g;

/** The relative imports of one module's source, with the reason comment above each. */
export function importsOf(
  source: string,
): { specifier: string; reason?: string }[] {
  const out: { specifier: string; reason?: string }[] = [];
  for (const m of source.matchAll(IMPORT_RE)) {
    const specifier = m[2] ?? m[3] ?? m[4];
    if (!specifier.startsWith(".")) continue;
    const reason = m[1]?.match(/\/\/\s*layers:\s*([^\n]+)/)?.[1].trim();
    out.push(reason ? { specifier, reason } : { specifier });
  }
  return out;
}

async function sourceFiles(
  root: URL,
  scope: readonly string[] | "all",
): Promise<string[]> {
  const files: string[] = [];
  const walk = async (rel: string) => {
    const info = await Deno.stat(new URL(rel, root));
    if (info.isFile) {
      if (/\.tsx?$/.test(rel)) files.push(rel);
      return;
    }
    for await (const e of Deno.readDir(new URL(rel || ".", root))) {
      if (rel === "" && NOT_CODE.has(e.name)) continue;
      await walk(rel ? `${rel}/${e.name}` : e.name);
    }
  };
  if (scope === "all") await walk("");
  else for (const s of scope) await walk(s);
  return files.sort();
}

/**
 * Every import arrow between the files in scope (the house, `SCOPE`, by default; "all"
 * for every module of the repository), from the code under `root`.
 */
export async function importGraph(
  root: URL,
  scope: readonly string[] | "all" = SCOPE,
): Promise<Arrow[]> {
  const files = await sourceFiles(root, scope);
  const known = new Set(files);
  const arrows: Arrow[] = [];
  for (const from of files) {
    const source = await Deno.readTextFile(new URL(from, root));
    for (const { specifier, reason } of importsOf(source)) {
      const to = new URL(specifier, new URL(from, root)).pathname.slice(
        root.pathname.length,
      );
      if (!known.has(to)) continue; // outside the scope (scripts/, static/ …)
      const same = arrows.find((a) => a.from === from && a.to === to);
      if (same) same.reason ??= reason; // an import and a re-export of one module
      else arrows.push(reason ? { from, to, reason } : { from, to });
    }
  }
  return arrows;
}

/** Import circles: the strongly connected groups of more than one file (Tarjan). */
export function circles(arrows: Arrow[]): string[][] {
  const next = new Map<string, string[]>();
  for (const a of arrows) {
    next.set(a.from, [...(next.get(a.from) ?? []), a.to]);
    if (!next.has(a.to)) next.set(a.to, []);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      const selfLoop = next.get(v)!.includes(v);
      if (group.length > 1 || selfLoop) groups.push(group.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return groups;
}

/** The arrows that point from a room to one on a higher floor. */
export function upwardArrows(arrows: Arrow[]): Arrow[] {
  return arrows.filter((a) => floorOf(roomOf(a.from)) < floorOf(roomOf(a.to)));
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url);
  const arrows = await importGraph(root);
  const rooms = new Set(arrows.flatMap((a) => [roomOf(a.from), roomOf(a.to)]));
  const roomArrows = new Set(
    arrows.map((a) => `${roomOf(a.from)} ${roomOf(a.to)}`).filter((k) =>
      new Set(k.split(" ")).size === 2
    ),
  );
  console.log(
    `${arrows.length} import arrows between files (${roomArrows.size} between rooms), ${rooms.size} rooms on ${FLOORS.length} floors`,
  );
  // Circles are looked for among all modules (tests, fuzzers, scripts included).
  const found = circles(await importGraph(root, "all"));
  console.log(`\n${found.length} import circle(s) among all modules`);
  for (const c of found) console.log(`  ${c.join(" ↔ ")}`);
  const up = upwardArrows(arrows);
  console.log(`\n${up.length} upward arrow(s)`);
  for (const a of up) {
    console.log(
      `  ${a.from} (${
        FLOORS[FLOORS.length - 1 - floorOf(roomOf(a.from))].name
      }) → ${a.to} (${FLOORS[FLOORS.length - 1 - floorOf(roomOf(a.to))].name})`,
    );
    console.log(`      reason: ${a.reason ?? "(none given)"}`);
  }
  if (found.length > 0 || up.some((a) => !a.reason)) Deno.exitCode = 1;
}
