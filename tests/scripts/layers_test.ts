/**
 * scripts/layers.ts: the import graph it reads, and the house it measures: no import
 * circle among any modules (tests, fuzzers and scripts too), at most five arrows running back up a floor (each with its reason), and no
 * module below the routes importing a route.
 */
import assert from "node:assert/strict";
import {
  type Arrow,
  circles,
  floorOf,
  importGraph,
  importsOf,
  roomOf,
  upwardArrows,
} from "../../scripts/layers.ts";

const root = new URL("../../", import.meta.url);
const arrows = await importGraph(root);

Deno.test("importsOf() reads static, type-only, multi-line, re-export and dynamic imports, and the reason above one", () => {
  const src = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b.ts";',
    "// layers: c needs d",
    "import {",
    "  c,",
    "  type D,",
    '} from "./c.ts";',
    'export { e } from "./e.ts";',
    'const f = await import("./f.ts");',
    'import "./g.ts";',
    'import { z } from "zod";',
    'import { h } from "npm:h@1";',
  ].join("\n");
  assert.deepEqual(importsOf(src), [
    { specifier: "./a.ts" },
    { specifier: "../b.ts" },
    { specifier: "./c.ts", reason: "c needs d" },
    { specifier: "./e.ts" },
    { specifier: "./f.ts" },
    { specifier: "./g.ts" },
  ]);
});

Deno.test("circles() finds each strongly connected group, and a module importing itself", () => {
  const a = (from: string, to: string): Arrow => ({ from, to });
  assert.deepEqual(
    circles([
      a("x", "y"),
      a("y", "z"),
      a("z", "x"),
      a("z", "w"),
      a("v", "v"),
      a("u", "w"),
    ]),
    [["v"], ["x", "y", "z"]].sort(),
  );
  assert.deepEqual(circles([a("x", "y"), a("y", "w")]), []);
});

Deno.test("roomOf() and upwardArrows(): a lib folder is a room, the ports one of them, arrows up a floor are found", () => {
  assert.equal(roomOf("lib/sessions/create.ts"), "lib/sessions");
  assert.equal(roomOf("lib/deps.ts"), "lib/deps.ts");
  assert.equal(roomOf("lib/ports/sfu.ts"), "lib/ports");
  assert.ok(floorOf("lib/sfu") > floorOf("lib/ports"));
  assert.equal(roomOf("routes/v1/sessions/index.ts"), "routes");
  assert.ok(floorOf("routes") > floorOf("lib/sessions"));
  assert.ok(floorOf("lib/sessions") > floorOf("lib/kv"));
  const down = { from: "lib/sessions/create.ts", to: "lib/kv/store.ts" };
  const up = { from: "lib/kv/store.ts", to: "lib/sessions/create.ts" };
  assert.deepEqual(upwardArrows([down, up]), [up]);
});

Deno.test("the graph covers the house: every room stands on a floor, and the deps builder is one composition root", () => {
  assert.ok(arrows.length > 500, `only ${arrows.length} arrows read`);
  for (const a of arrows) {
    floorOf(roomOf(a.from)); // throws for a room no floor names
    floorOf(roomOf(a.to));
  }
  assert.ok(arrows.some((a) => a.from === "app.ts" && a.to === "lib/wire.ts"));
  assert.ok(
    !arrows.some((a) => a.from === "lib/deps.ts" && roomOf(a.to) === "lib/sfu"),
    "lib/deps.ts names the SFU port only",
  );
});

Deno.test("no import circle among any of the repository's modules, type imports included", async () => {
  const all = await importGraph(root, "all");
  assert.ok(
    all.some((a) => a.from.startsWith("fuzz/")) &&
      all.some((a) => a.from.startsWith("tests/")),
    "the whole graph covers the fuzzers and the tests",
  );
  assert.deepEqual(circles(all), []);
});

Deno.test("at most five arrows run back up a floor, each with its reason where it stands", () => {
  const up = upwardArrows(arrows);
  const unexplained = up.filter((a) => !a.reason).map((a) =>
    `${a.from} → ${a.to}`
  );
  assert.deepEqual(unexplained, [], "add `// layers: <why>` above the import");
  assert.ok(up.length <= 5, `${up.length} upward arrows`);
});

Deno.test("nothing below the routes imports a route", () => {
  const into = arrows.filter((a) =>
    roomOf(a.to) === "routes" &&
    !["routes", "manifest.ts"].includes(roomOf(a.from))
  );
  assert.deepEqual(into, []);
});
