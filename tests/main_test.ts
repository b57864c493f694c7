/**
 * `main.ts` as its own process: it refuses to start without the console bundle (one
 * line on stderr, exit 1) and starts once `deno task build` made it, as on Deno Deploy;
 * its banner says where `doc_url` points (DECISIONS 3); a stray rejection or throw is
 * logged redacted and the process lives on.
 */
import assert from "node:assert/strict";
import { ensureIslandsBuilt } from "../lib/console/bundle.ts";
import { DEFAULT_DOCS_BASE_URL } from "../lib/config.ts";
import { TEST_ADMIN_KEY, TEST_TOKEN_SECRET } from "./_helpers.ts";

const ROOT = new URL("../", import.meta.url);
/** Never copied into a fresh tree: build output, local state, VCS. */
const SKIP = new Set([".git", "data", "test-output", "node_modules", "build"]);

/** Copies the source tree, as a fresh clone has it (no static/build/), into `to`. */
async function copyTree(from: URL, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (SKIP.has(e.name)) continue;
    const src = new URL(e.name + (e.isDirectory ? "/" : ""), from);
    if (e.isDirectory) await copyTree(src, `${to}/${e.name}`);
    else if (e.isFile) await Deno.copyFile(src, `${to}/${e.name}`);
  }
}

interface Started {
  base: string;
  stdout: string;
  stop(): Promise<void>;
}

const ENV = {
  PORT: "0",
  KV_PATH: ":memory:",
  TOKEN_SECRET: TEST_TOKEN_SECRET,
  ADMIN_API_KEY: TEST_ADMIN_KEY,
  DOCS_BASE_URL: "",
  PUBLIC_URL: "",
};

/** Runs `deno <args>` in `cwd` until it listens (resolves) or exits (rejects with its output). */
async function start(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Started> {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { ...ENV, ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let base = "";
  while (!base) {
    const { value, done } = await reader.read();
    if (done) {
      const status = await child.status;
      throw new Error(
        `exit ${status.code}\nstdout: ${seen}\nstderr: ${await stderr}`,
      );
    }
    seen += value;
    base = seen.match(/listening on (http:\/\/\S+)/)?.[1] ?? "";
  }
  // Keep reading (the rest of the banner, then whatever comes) so the pipe never fills.
  const drain = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      seen += value;
    }
  })();
  // The banner's lines are printed in one go when it listens.
  await new Promise((ok) => setTimeout(ok, 300));
  return {
    base,
    get stdout() {
      return seen;
    },
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await drain.catch(() => {});
      await stderr;
    },
  };
}

Deno.test("main.ts refuses to start without the console bundle; `deno task build` makes it, as Deploy's build step", async () => {
  const tree = await Deno.makeTempDir({ prefix: "avatar-fresh-clone-" });
  try {
    await copyTree(ROOT, tree);
    const refused = await new Deno.Command(Deno.execPath(), {
      // --quiet: only the service's own output (no Deno download notes).
      args: ["run", "--quiet", "-A", "main.ts"],
      cwd: tree,
      env: ENV,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(refused.stderr);
    assert.equal(refused.code, 1, stderr);
    assert.equal(new TextDecoder().decode(refused.stdout), "");
    const lines = stderr.trim().split("\n");
    assert.equal(lines.length, 1, stderr);
    assert.match(
      lines[0],
      /^console bundle missing: static\/build\/client\.js is not built; run `deno task build`/,
    );

    const build = await new Deno.Command(Deno.execPath(), {
      args: ["task", "build"],
      cwd: tree,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(build.success, new TextDecoder().decode(build.stderr));

    const svc = await start(tree, ["run", "-A", "main.ts"]);
    try {
      const js = await fetch(`${svc.base}/static/build/client.js`);
      assert.equal(js.status, 200);
      assert.ok((await js.text()).length > 1000);
      const worklet = await fetch(`${svc.base}/static/build/pcm-worklet.js`);
      assert.equal(worklet.status, 200);
      await worklet.body?.cancel();
    } finally {
      await svc.stop();
    }
  } finally {
    await Deno.remove(tree, { recursive: true });
  }
});

Deno.test("`deno task start` builds the console bundle before it starts main.ts", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  );
  assert.match(config.tasks.start, /^deno task build && deno run .* main\.ts$/);
  assert.match(config.tasks.build, /lib\/console\/bundle\.ts$/);
});

Deno.test("the start banner says where doc_url points, and an https PUBLIC_URL makes it resolve here", async (t) => {
  await ensureIslandsBuilt();
  await t.step(
    "neither DOCS_BASE_URL nor PUBLIC_URL: the documented default",
    async () => {
      const svc = await start(ROOT.pathname, ["run", "-A", "main.ts"]);
      try {
        assert.match(
          svc.stdout,
          new RegExp(
            `error doc links: doc_url points at the documented default ${DEFAULT_DOCS_BASE_URL}`,
          ),
        );
        const body = await (await fetch(`${svc.base}/v1/nowhere`)).json();
        assert.equal(
          body.doc_url,
          `${DEFAULT_DOCS_BASE_URL}/errors/AVTR_NOT_FOUND`,
        );
      } finally {
        await svc.stop();
      }
    },
  );
  await t.step(
    "an https PUBLIC_URL: its /docs, served by this app",
    async () => {
      const svc = await start(ROOT.pathname, ["run", "-A", "main.ts"], {
        PUBLIC_URL: "https://avatar.example.com",
      });
      try {
        assert.doesNotMatch(svc.stdout, /error doc links/);
        const body = await (await fetch(`${svc.base}/v1/nowhere`)).json();
        const url = new URL(body.doc_url);
        assert.equal(
          url.href,
          "https://avatar.example.com/docs/errors/AVTR_NOT_FOUND",
        );
        // The same path on this instance is the code's page.
        const page = await fetch(`${svc.base}${url.pathname}`);
        assert.equal(page.status, 200);
        assert.match(await page.text(), /AVTR_NOT_FOUND/);
      } finally {
        await svc.stop();
      }
    },
  );
});

/** This machine's first IPv4 address that is not loopback, if it has one. */
const otherAddress = Deno.networkInterfaces().find((i) =>
  i.family === "IPv4" && !i.address.startsWith("127.")
)?.address;

Deno.test({
  name:
    "HOST=127.0.0.1 listens on loopback only; by default every interface answers",
  ignore: otherAddress === undefined,
  async fn(t) {
    await ensureIslandsBuilt();
    const reach = async (host: string, port: string) => {
      try {
        const conn = await Deno.connect({ hostname: host, port: Number(port) });
        conn.close();
        return true;
      } catch {
        return false;
      }
    };
    await t.step("HOST=127.0.0.1", async () => {
      const svc = await start(ROOT.pathname, ["run", "-A", "main.ts"], {
        HOST: "127.0.0.1",
      });
      try {
        const port = new URL(svc.base).port;
        assert.equal(svc.base, `http://127.0.0.1:${port}`);
        assert.equal((await fetch(`${svc.base}/healthz`)).status, 200);
        assert.equal(await reach(otherAddress!, port), false);
      } finally {
        await svc.stop();
      }
    });
    await t.step("no HOST", async () => {
      const svc = await start(ROOT.pathname, ["run", "-A", "main.ts"]);
      try {
        const port = new URL(svc.base).port;
        assert.equal(await reach(otherAddress!, port), true);
      } finally {
        await svc.stop();
      }
    });
  },
});

Deno.test("main.ts logs an unhandled rejection and an uncaught throw through the redacting logger, and lives on", async () => {
  const secret =
    "avk_01JLEAKLEAKLEAKLEAKLEAKLEA_leakedsecretvalue0123456789abcdefgh";
  const dir = await Deno.makeTempDir();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "tests/fixtures/last_resort_child.ts"],
    cwd: new URL("../", import.meta.url),
    env: {
      PORT: "0",
      KV_PATH: `${dir}/kv.sqlite`,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      LEAK_SECRET: secret,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const deadline = Date.now() + 20_000;
  try {
    while (!out.includes("still alive") && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    assert.ok(out.includes("still alive"), `the process died:\n${out}`);
  } finally {
    child.kill("SIGTERM");
    await reader.cancel();
    const { stderr } = await child.output().catch(() => ({ stderr: null }));
    await Deno.remove(dir, { recursive: true });
    const err = stderr ? new TextDecoder().decode(stderr) : "";
    assert.equal(err.includes(secret.slice(4)), false, "stderr leaked");
  }
  assert.equal(out.includes(secret.slice(4)), false, out);
  const records = out.split("\n").filter((l) => l.startsWith("{")).map((l) =>
    JSON.parse(l)
  );
  const rejection = records.find((r) => r.msg === "unhandled rejection");
  assert.ok(rejection, out);
  assert.equal(rejection.level, "error");
  assert.match(rejection.reason.message, /Bearer \[redacted\]/);
  const thrown = records.filter((r) => r.msg === "uncaught exception");
  assert.equal(thrown.length, 2, out);
  assert.match(thrown[0].error.message, /token=\[redacted\]/);
  assert.deepEqual(thrown[1].error, { type: "object" });
});

Deno.test("main.ts exits 1 with one line when its port is taken, instead of living on serving nothing", async () => {
  await ensureIslandsBuilt();
  const taken = Deno.listen({ port: 0 });
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: ROOT,
      env: { ...ENV, PORT: String((taken.addr as Deno.NetAddr).port) },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    // Without the fix it never exits: stop it after a bound, and fail.
    const bound = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const out = await child.output();
    clearTimeout(bound);
    assert.equal(out.code, 1, "exits 1 by itself");
    assert.match(
      new TextDecoder().decode(out.stderr),
      /^cannot listen on port \d+: .*in use/m,
    );
  } finally {
    taken.close();
  }
});
