/** Keeps docs true: the error and configuration pages list every code and variable. */
import assert from "node:assert/strict";
import { ERROR_CODES } from "../lib/errors.ts";

const root = new URL("..", import.meta.url);
const read = (path: string) => Deno.readTextFile(new URL(path, root));

/** Every environment variable a config module reads (`env.X`, `env["X"]`, `f(env, "X")`). */
function configVariables(source: string): string[] {
  const names = new Set<string>();
  const re =
    /\benv(?:\.([A-Z][A-Z0-9_]*)|\[\s*"([A-Z][A-Z0-9_]*)"\s*\]|,\s*"([A-Z][A-Z0-9_]*)")/g;
  for (const m of source.matchAll(re)) names.add(m[1] ?? m[2] ?? m[3]);
  return [...names].sort();
}

Deno.test("configVariables() finds each way lib/config.ts reads a variable", () => {
  const src = `env.A_B; env["C"]; int(env, "D_1", 3); bool(env, "E")`;
  assert.deepEqual(configVariables(src), ["A_B", "C", "D_1", "E"]);
});

Deno.test("docs/configuration.md lists every variable lib/config.ts and lib/config_nodes.ts read", async () => {
  const doc = await read("docs/configuration.md");
  const vars = configVariables(
    (await read("lib/config.ts")) + (await read("lib/config_nodes.ts")),
  );
  assert.ok(vars.length >= 20, `found only ${vars.length}`);
  const rows = new Set(
    [...doc.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1]),
  );
  const missing = vars.filter((v) => !rows.has(v));
  assert.deepEqual(missing, [], "variables without a table row");
});

Deno.test("docs/errors.md lists every code of ERROR_CODES with its status", async () => {
  const doc = await read("docs/errors.md");
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    const row = doc.split("\n").find((l) => l.startsWith(`| \`${code}\``));
    assert.ok(row, `${code} has no row`);
    const cells = row.split("|").map((c) => c.trim());
    assert.equal(cells[2], String(info.status), code);
    assert.equal(cells[3], info.retryable ? "yes" : "no", code);
  }
});

/** GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens. */
function headingSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a Markdown text's headings (outside code fences), duplicates numbered. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fence = !fence;
    const m = !fence && line.match(/^#{1,6} (.+)$/);
    if (!m) continue;
    const slug = headingSlug(m[1]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** README.md and every Markdown file under docs/, as paths from the root. */
async function markdownFiles(): Promise<string[]> {
  const files = ["README.md"];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(new URL(dir, root))) {
      if (e.isDirectory) await walk(`${dir}${e.name}/`);
      else if (e.name.endsWith(".md")) files.push(`${dir}${e.name}`);
    }
  };
  await walk("docs/");
  return files.sort();
}

Deno.test("headingSlug() makes GitHub's anchors", () => {
  assert.equal(headingSlug("Realtime SFU (Janus)"), "realtime-sfu-janus");
  assert.equal(headingSlug("`deno task demo`"), "deno-task-demo");
  assert.equal(
    headingSlug("Where the first frame's time goes (breakdown)"),
    "where-the-first-frames-time-goes-breakdown",
  );
});

Deno.test("every relative link in README.md and docs/ reaches a file and, with #, a heading", async () => {
  const broken: string[] = [];
  for (const file of await markdownFiles()) {
    const text = await read(file);
    const prose = text.replace(/^```[\s\S]*?^```/gm, "");
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, hash] = target.split("#");
      const dest = path
        ? new URL(path, new URL(file, root))
        : new URL(file, root);
      let destText: string | undefined;
      try {
        const stat = await Deno.stat(dest);
        if (stat.isFile) destText = await Deno.readTextFile(dest);
      } catch {
        broken.push(`${file}: ${target} (no such file)`);
        continue;
      }
      if (hash && destText !== undefined && !anchors(destText).has(hash)) {
        broken.push(`${file}: ${target} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("docs/*.md pages stay under 400 lines (history goes to docs/notes/)", async () => {
  for (const file of await markdownFiles()) {
    if (!/^docs\/[^/]+\.md$/.test(file)) continue;
    const lines = (await read(file)).split("\n").length;
    assert.ok(lines < 400, `${file} has ${lines} lines`);
  }
});
