/**
 * The API benchmark's servers as subprocesses (bench/api.ts): a free loopback port, a
 * `deno` child with its stderr's tail kept for errors, readiness polling and SIGTERM.
 */

const ROOT = new URL("..", import.meta.url).pathname;
/** A loopback port free now (the OS picks it; a race is unlikely on loopback). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** A running child `deno` serving on `base`. */
export interface Server {
  base: string;
  child: Deno.ChildProcess;
  stderr: () => string;
}

/** Spawns `deno <args>` from the repository root with `env`, serving on `port`. */
export function spawn(
  args: string[],
  env: Record<string, string>,
  port: number,
): Server {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    cwd: ROOT,
    stdin: "null",
    // The service writes one access-log line per request: part of its real cost.
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let err = "";
  (async () => {
    const dec = new TextDecoder();
    for await (const chunk of child.stderr) {
      err = (err + dec.decode(chunk)).slice(-4000);
    }
  })();
  return { base: `http://127.0.0.1:${port}`, child, stderr: () => err };
}

/** Polls `path` until it answers 2xx (30 s at most; the child's stderr on failure). */
export async function waitReady(server: Server, path: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(server.base + path);
      await res.body?.cancel();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not become ready:\n${server.stderr()}`);
}

/** SIGTERM, and waits for the child to exit. */
export async function stop(server: Server): Promise<void> {
  try {
    server.child.kill("SIGTERM");
  } catch {
    // already gone
  }
  await server.child.status;
}
