import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;
/** Bounds every wait so a broken demo fails instead of hanging; nothing asserts on time. */
const WAIT_MS = 90_000;

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = l.addr as Deno.NetAddr;
  l.close();
  return port;
}

/** Collects a child's output and lets a test wait for a pattern in it. */
class Output {
  text = "";
  #waiters: (() => void)[] = [];
  readonly done: Promise<void>;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.done = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) {
        this.text += decoder.decode(chunk, { stream: true });
        this.#waiters.splice(0).forEach((w) => w());
      }
      this.#waiters.splice(0).forEach((w) => w());
    })();
  }

  async match(re: RegExp): Promise<RegExpMatchArray> {
    const until = Date.now() + WAIT_MS;
    while (true) {
      const m = this.text.match(re);
      if (m) return m;
      if (Date.now() > until) {
        throw new Error(`no ${re} in the demo's output:\n${this.text}`);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((ok) => {
        this.#waiters.push(ok);
        timer = setTimeout(ok, 1000);
      });
      clearTimeout(timer);
    }
  }
}

Deno.test("deno task demo: engine and service in one command, stopped by Ctrl-C", async (t) => {
  const port = freePort();
  const enginePort = freePort();
  const dir = await Deno.makeTempDir({ prefix: "demo-test-" });
  const env: Record<string, string> = {
    PORT: String(port),
    ENGINE_PORT: String(enginePort),
    KV_PATH: `${dir}/kv.sqlite`,
    NO_COLOR: "1",
  };
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(name);
    if (v !== undefined) env[name] = v;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/demo.ts"],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = new Output(child.stdout);
  const err = new Output(child.stderr);
  let stopped = false;
  try {
    let adminKey = "";
    let engineUrl = "";
    await t.step(
      "prints the console URL, a random admin key and the engine",
      async () => {
        await out.match(/Demo ready\./);
        assert.match(
          out.text,
          new RegExp(`Try it: +http://localhost:${port}/admin/try`),
        );
        adminKey = (await out.match(/Sign in with: +(\S+)/))[1];
        assert.match(adminKey, /^demo_[A-Za-z0-9_-]{32}$/);
        engineUrl = (await out.match(/Example engine: +(wss:\/\/\S+)/))[1];
        assert.equal(engineUrl, `wss://localhost:${enginePort}`);
        assert.match(out.text, /TEST-ONLY certificates/);
      },
    );

    await t.step(
      "the printed key works and the service reaches the engine over TLS",
      async () => {
        const base = `http://localhost:${port}`;
        const page = await fetch(`${base}/admin/try`, { redirect: "manual" });
        await page.body?.cancel();
        assert.equal(page.status, 303);
        // The printed key is the service's ADMIN_API_KEY: it works against /v1 too.
        const res = await fetch(`${base}/v1/sessions`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${adminKey}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({
            provider_type: "external_engine",
            provider_config: {
              external_engine: { url: engineUrl, auth_headers: {} },
            },
            transport: "websocket_fmp4",
          }),
        });
        assert.equal(res.status, 200);
        const s = await res.json();
        // The media socket activates the session: the service reached the engine over
        // TLS (DENO_CERT) on loopback (ALLOW_PRIVATE_NETWORK_TARGETS).
        const ws = new WebSocket(
          `ws://localhost:${port}/v1/sessions/${
            encodeURIComponent(s.session_id)
          }/ws?token=${encodeURIComponent(s.client_token)}`,
        );
        const statuses: string[] = [];
        const closed = new Promise<void>((ok) => ws.onclose = () => ok());
        await new Promise<void>((ok, fail) => {
          ws.onmessage = (e) => {
            if (typeof e.data !== "string") return;
            const msg = JSON.parse(e.data);
            if (msg.type === "session.state") statuses.push(msg.status);
            if (msg.status === "active") ok();
            if (msg.type === "error") fail(new Error(e.data));
          };
        });
        ws.close();
        await closed;
        assert.ok(statuses.includes("active"), statuses.join(","));
        const end = await fetch(
          `${base}/v1/sessions/${encodeURIComponent(s.session_id)}/end`,
          { method: "POST", headers: { authorization: `Bearer ${adminKey}` } },
        );
        assert.equal(end.status, 200);
        await end.body?.cancel();
      },
    );

    await t.step("SIGINT stops the service and the engine", async () => {
      child.kill("SIGINT");
      const status = await child.status;
      stopped = true;
      await out.done;
      await err.done;
      assert.equal(status.code, 0, out.text + err.text);
      assert.match(out.text, /Demo stopped\./);
      // Both ports are free again.
      for (const p of [port, enginePort]) {
        const l = Deno.listen({ hostname: "127.0.0.1", port: p });
        l.close();
      }
    });
  } finally {
    if (!stopped) {
      child.kill("SIGKILL");
      await child.status;
      await out.done;
      await err.done;
    }
    await Deno.remove(dir, { recursive: true });
  }
});
