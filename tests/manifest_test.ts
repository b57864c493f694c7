import assert from "node:assert/strict";
import manifest from "../manifest.ts";
import { fileToTemplate } from "../lib/api/router.ts";

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await walk(p));
    else if (/\.(tsx?|jsx?)$/.test(e.name)) out.push(p);
  }
  return out;
}

Deno.test("manifest lists exactly the modules under routes/", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const files = (await walk(`${root}routes`)).map((f) =>
    "./" + f.slice(root.length)
  ).sort();
  assert.deepEqual(Object.keys(manifest.routes).sort(), files);
});

Deno.test("fileToTemplate() maps Fresh-style file paths to URL patterns", async (t) => {
  const cases: [string, string][] = [
    ["./routes/index.tsx", "/"],
    ["./routes/healthz.ts", "/healthz"],
    ["./routes/v1/sessions/index.ts", "/v1/sessions"],
    [
      "./routes/v1/sessions/[session_id]/end.ts",
      "/v1/sessions/:session_id/end",
    ],
    ["./routes/v1/api-keys/[key_id].ts", "/v1/api-keys/:key_id"],
  ];
  for (const [file, template] of cases) {
    await t.step(file, () => assert.equal(fileToTemplate(file), template));
  }
});
