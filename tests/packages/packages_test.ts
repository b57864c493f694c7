/**
 * The client packages as a customer gets them: `deno task pack` builds the tarballs,
 * `npm install` puts them into fresh projects, and then
 * - a Node backend (plain JavaScript, Node ≥ 20) creates, reads, refreshes and ends a
 *   session against the real service, and Bun runs the same script;
 * - `tsc --noEmit` checks a TypeScript backend on Node (no DOM types) and the React
 *   example with a typed consumer: the types resolve and nothing answered is `any`;
 * - the React example (examples/react) is built by Vite from the tarballs and plays in
 *   headless Chromium: the avatar shows, a typed turn makes it speak, the caption
 *   shows. Screenshot: test-output/screenshots/react_example.png.
 *
 * npm brings React, Vite and TypeScript (pinned by examples/react/package.json) and Bun.
 */
import assert from "node:assert/strict";
import { pack } from "../../scripts/pack.ts";
import { run } from "../../scripts/_run.ts";
import { TEST_ADMIN_KEY } from "../_helpers.ts";
import { SHOTS, WAIT } from "../e2e/_browser.ts";
import { startPlayerStack } from "../e2e/_player.ts";

const HERE = new URL("./consumer/", import.meta.url).pathname;
const EXAMPLE = new URL("../../examples/react/", import.meta.url).pathname;
const NPM = ["--no-audit", "--no-fund", "--loglevel=error"];
/** Bun, from npm like the rest, runs the same backend script. */
const BUN = "1.4.5";

/** A fresh project in a temp folder; returns its path. */
async function project(prefix: string): Promise<string> {
  return await Deno.makeTempDir({ prefix });
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.name === "node_modules" || e.name === "dist") continue;
    if (e.isDirectory) await copyTree(`${from}/${e.name}`, `${to}/${e.name}`);
    else await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

Deno.test({
  name: "the client packages install with npm and work as a customer uses them",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const out = await Deno.makeTempDir({ prefix: "live-avatar-tgz-" });
  const dirs = [out];
  const tgz = await pack(out);
  const server = tgz.get("@live-avatar/server")!;
  const browser = tgz.get("@live-avatar/browser")!;
  const react = tgz.get("@live-avatar/react")!;

  // The React example, its @live-avatar dependencies taken from the tarballs.
  const app = await project("live-avatar-react-app-");
  dirs.push(app);
  await copyTree(EXAMPLE, app);
  const manifest = JSON.parse(await Deno.readTextFile(`${app}/package.json`));
  manifest.dependencies["@live-avatar/browser"] = `file:${browser}`;
  manifest.dependencies["@live-avatar/react"] = `file:${react}`;
  await Deno.writeTextFile(
    `${app}/package.json`,
    JSON.stringify(manifest, null, 2),
  );

  const stack = await startPlayerStack({
    prefix: "packages-e2e-",
    viewport: { width: 700, height: 900 },
    transport: "websocket_fmp4",
    siteDir: `${app}/dist`,
  });
  try {
    await t.step(
      "a Node backend creates, reads, refreshes and ends a session; Bun runs it too",
      async () => {
        const dir = await project("live-avatar-node-");
        dirs.push(dir);
        await Deno.writeTextFile(
          `${dir}/package.json`,
          JSON.stringify({ private: true, type: "module" }),
        );
        await run("npm", ["install", ...NPM, server, `bun@${BUN}`], {
          cwd: dir,
        });
        await Deno.copyFile(`${HERE}backend.mjs`, `${dir}/backend.mjs`);
        const env = {
          AVATAR_BASE_URL: stack.serviceBase,
          AVATAR_API_KEY: TEST_ADMIN_KEY,
          ENGINE_URL: stack.engine.url,
          ENGINE_TOKEN: stack.engine.token,
        };
        for (const runtime of ["node", `${dir}/node_modules/.bin/bun`]) {
          const r = JSON.parse(
            await run(runtime, ["backend.mjs"], { cwd: dir, env }),
          );
          if (runtime === "node") {
            assert.ok(Number(r.node.split(".")[0]) >= 20, `node ${r.node}`);
          }
          assert.match(r.id, /^session:/, runtime);
          assert.equal(r.created, "created");
          assert.equal(r.read, "created");
          assert.equal(r.token, true);
          assert.equal(r.ended, "ended");
          assert.equal(r.missing, "AVTR_SESSION_NOT_FOUND");
        }
      },
    );

    await t.step(
      "the React example installs from the tarballs; tsc finds every type",
      async () => {
        await run("npm", ["install", ...NPM], { cwd: app });
        // A TypeScript backend and typed page code beside the example.
        await run("npm", [
          "install",
          ...NPM,
          "--no-save",
          server,
          "@types/node@20.19.43",
        ], { cwd: app });
        for (const f of ["node_types.ts", "tsconfig.node.json"]) {
          await Deno.copyFile(`${HERE}${f}`, `${app}/${f}`);
        }
        await Deno.copyFile(`${HERE}react_types.ts`, `${app}/src/typed.ts`);
        const tsc = `${app}/node_modules/typescript/bin/tsc`;
        await run("node", [tsc, "-p", "tsconfig.node.json"], { cwd: app });
        await run("node", [tsc, "-p", "."], { cwd: app });
      },
    );

    await t.step(
      "Vite builds it, and it plays and speaks in Chromium",
      async () => {
        await run("node", [`${app}/node_modules/vite/bin/vite.js`, "build"], {
          cwd: app,
        });
        const { page, pageBase } = stack;
        await page.goto(pageBase);
        await page.getByRole("button", { name: "Start", exact: true }).click();
        await page.waitForFunction(
          () => document.getElementById("state")?.textContent === "open",
          undefined,
          WAIT,
        );
        // The avatar is drawn (WebCodecs on the component's canvas in Chromium).
        await page.waitForFunction(
          () => {
            const c = document.querySelector<HTMLCanvasElement>(
              "canvas.avatar-canvas",
            );
            const v = document.querySelector("video");
            return (c && !c.hidden && c.width > 0) ||
              (v && !v.hidden && v.currentTime > 1);
          },
          undefined,
          WAIT,
        );
        await page.getByRole("button", { name: "Mute", exact: true }).click();
        await page.getByLabel("Message").fill("Hello from React");
        await page.getByRole("button", { name: "Send", exact: true }).click();
        await page.waitForFunction(
          () =>
            document.getElementById("speaking")?.dataset.speaking === "true",
          undefined,
          WAIT,
        );
        await page.waitForFunction(
          () => (document.getElementById("caption")?.textContent ?? "") !== "",
          undefined,
          WAIT,
        );
        // The hook's stats: which decoder plays (WebCodecs in Chromium).
        await page.waitForFunction(
          () =>
            document.getElementById("decoder")?.textContent === "· webcodecs",
          undefined,
          WAIT,
        );
        await page.screenshot({
          path: new URL("react_example.png", SHOTS).pathname,
        });
        const alert = await page.evaluate(() =>
          document.querySelector("[role=alert]")?.textContent ?? null
        );
        assert.equal(alert, null);
        await page.getByRole("button", { name: "End", exact: true }).click();
        await page.waitForFunction(
          () => document.getElementById("state")?.textContent === "closed",
          undefined,
          WAIT,
        );
        assert.deepEqual(stack.browser.problems, []);
      },
    );
  } finally {
    await stack.close();
    for (const d of dirs) await Deno.remove(d, { recursive: true });
  }
});
