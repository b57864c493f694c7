/** Keeps docs true: the error and configuration pages list every code and variable. */
import assert from "node:assert/strict";
import { ERROR_CODES } from "../lib/api/errors.ts";

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

Deno.test("docs/configuration.md lists every variable lib/config.ts and lib/nodes/config.ts read", async () => {
  const doc = await read("docs/configuration.md");
  const vars = configVariables(
    (await read("lib/config.ts")) + (await read("lib/nodes/config.ts")),
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
