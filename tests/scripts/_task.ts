/** Runs a `deno task` of this project as an operator would, with a clean environment. */

const ROOT = new URL("../..", import.meta.url).pathname;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `deno task -q <task> ...args` in the project folder, against the KV file `kvPath`. */
export async function runTask(
  task: string,
  kvPath: string,
  args: string[],
): Promise<Run> {
  const env: Record<string, string> = { KV_PATH: kvPath, NO_COLOR: "1" };
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const v = Deno.env.get(name);
    if (v !== undefined) env[name] = v;
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", task, ...args],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}
